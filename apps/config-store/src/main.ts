import 'reflect-metadata';
import { configSubjectWildcard } from '@granule/contracts';
import {
  createMetrics,
  natsCheck,
  postgresCheck,
  registerRequestMetrics,
  serveHealthChecks,
} from '@granule/observability';
import { createLogger, exitService, readLogSettings, redactUrl, runService } from '@granule/service-kit';
import { loadConfigStoreConfig } from './config/config.service';
import { startConfigStore } from './config-store.runtime';

// Bad config and unreachable dependencies: one line, exit code 1, no stack trace.
runService('config-store', async () => {
  const config = loadConfigStoreConfig(process.env);
  const logger = createLogger('config-store', readLogSettings(process.env));
  const metrics = createMetrics('config-store', { runMetrics: false });
  const runtime = await startConfigStore(
    config,
    (message, err) => logger.error({ err: err instanceof Error ? err.message : String(err) }, message),
    {
      logger,
      metrics: registerRequestMetrics(metrics.registry),
      onNatsLost: (message) => exitService('config-store', message),
    },
  );
  for (const note of runtime.notes) logger.info(note);
  logger.info(`NATS API on ${configSubjectWildcard(config.subjectPrefix)} (${redactUrl(config.natsUrl)})`);
  if (config.apiTokens.length > 0) {
    await runtime.listenHttp().catch(async (err: unknown) => {
      await runtime.stop();
      throw err;
    });
    logger.info(
      `HTTP API on http://${config.httpHost}:${config.httpPort} for ${config.apiTokens.map((c) => c.name).join(', ')}`,
    );
  } else {
    logger.warn('HTTP API off: set GRANULE_API_TOKEN or GRANULE_API_TOKENS (16+ characters each) to enable it');
  }

  const checks = [natsCheck(runtime.nc), postgresCheck(runtime.dataSource)];
  await serveHealthChecks({ port: config.healthPort, checks, metrics }, (message) => logger.warn(message));

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info(`${signal}: stopping`);
    await runtime.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
});
