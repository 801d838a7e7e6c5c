import 'reflect-metadata';
import { ConsoleLogger, Logger } from '@nestjs/common';
import { configSubjectWildcard } from '@granule/contracts';
import { createMetrics, natsCheck, postgresCheck, serveHealthChecks } from '@granule/observability';
import { exitService, redactUrl, runService } from '@granule/service-kit';
import { loadConfigStoreConfig } from './config/config.service';
import { startConfigStore } from './config-store.runtime';

// JSON lines, like the orchestrator's and the agents' logs.
Logger.overrideLogger(new ConsoleLogger({ json: true, colors: false }));
const logger = new Logger('config-store');

// Bad config and unreachable dependencies: one line, exit code 1, no stack trace.
runService('config-store', async () => {
  const config = loadConfigStoreConfig(process.env);
  const runtime = await startConfigStore(
    config,
    (message, err) => logger.error(`${message}: ${err instanceof Error ? err.message : String(err)}`),
    { onNatsLost: (message) => exitService('config-store', message) },
  );
  for (const note of runtime.notes) logger.log(note);
  logger.log(`NATS API on ${configSubjectWildcard(config.subjectPrefix)} (${redactUrl(config.natsUrl)})`);
  if (config.apiToken) {
    await runtime.listenHttp().catch(async (err: unknown) => {
      await runtime.stop();
      throw err;
    });
    logger.log(`HTTP API on http://${config.httpHost}:${config.httpPort}`);
  } else {
    logger.warn('HTTP API off: set GRANULE_API_TOKEN (16+ characters) to enable it');
  }

  const checks = [natsCheck(runtime.nc), postgresCheck(runtime.dataSource)];
  const metrics = createMetrics('config-store', { runMetrics: false });
  await serveHealthChecks({ port: config.healthPort, checks, metrics }, (message) => logger.warn(message));

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal}: stopping`);
    await runtime.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
});
