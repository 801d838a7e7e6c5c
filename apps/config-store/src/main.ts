import 'reflect-metadata';
import { ConsoleLogger, Logger } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { GranuleError } from '@granule/core';
import { configSubjectWildcard } from '@granule/contracts';
import { createMetrics, natsCheck, postgresCheck, serveHealthChecks } from '@granule/observability';
import { ConfigService } from './config/config.service';
import { startHttpApi } from './http/http-server';
import { startConfigStore } from './config-store.runtime';

// JSON lines, like the orchestrator's and the agents' logs.
Logger.overrideLogger(new ConsoleLogger({ json: true, colors: false }));
const logger = new Logger('config-store');

/** Bad config and unreachable dependencies: one line per problem, exit code 1, no stack trace. */
function fail(err: unknown): never {
  if (err instanceof GranuleError) {
    for (const line of err.message.split('\n')) process.stderr.write(`config-store: ${line}\n`);
  } else {
    process.stderr.write(
      `config-store: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
  }
  process.exit(1);
}

async function main(): Promise<void> {
  let config;
  try {
    config = ConfigService.fromEnvironment().config;
  } catch (err) {
    fail(err);
  }
  const runtime = await startConfigStore(config, (message, err) =>
    logger.error(`${message}: ${err instanceof Error ? err.message : String(err)}`),
  ).catch(fail);
  for (const note of runtime.notes) logger.log(note);
  logger.log(`NATS API on ${configSubjectWildcard(config.subjectPrefix)} (${config.natsUrl})`);

  let app: NestExpressApplication | undefined;
  if (config.apiToken) {
    try {
      app = await startHttpApi(runtime.api, { token: config.apiToken, port: config.httpPort, host: config.httpHost });
    } catch (err) {
      await runtime.stop();
      fail(
        new GranuleError(
          'HTTP_UNAVAILABLE',
          `cannot listen on ${config.httpHost}:${config.httpPort}: ${(err as Error).message} — set GRANULE_HTTP_PORT`,
        ),
      );
    }
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
    await app?.close();
    await runtime.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

void main();
