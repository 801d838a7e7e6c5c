// Nest's dependency injection reads decorator metadata through the Reflect API: load it first.
import 'reflect-metadata';
import { mkdir } from 'node:fs/promises';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import { Logger as NestLogger } from 'nestjs-pino';
import { createMetrics, natsCheck, registerAgentMetrics, serveHealthChecks } from '@granule/observability';
import { readLogSettings, type LogFormat } from '@granule/service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { createAgentLogger, type AgentLogger } from './agent-logger';
import { AgentModule } from './agent.module';
import { NATS_CONNECTION } from './agent.tokens';
import { readAgentConfig } from './config/agent-config.provider';
import type { AgentConfig } from './config/agent-config';

/**
 * The agent samples its event-loop lag once a second: it idles on thousands of hosts, and every
 * sample is a wake-up (ADR 0008).
 */
const AGENT_EVENT_LOOP_PRECISION_MS = 1000;

/** Startup failures are one plain line on stderr (systemd shows it) and exit code 1. */
function fail(message: string): never {
  process.stderr.write(`node-agent: ${message}\n`);
  process.exit(1);
}

async function main(): Promise<void> {
  let config: AgentConfig;
  try {
    config = readAgentConfig();
  } catch (err) {
    fail((err as Error).message);
  }
  try {
    await mkdir(config.rootDir, { recursive: true });
    await mkdir(config.stateDir, { recursive: true, mode: 0o700 });
  } catch (err) {
    fail(`cannot create GRANULE_ROOT '${config.rootDir}': ${(err as Error).message}`);
  }
  let format: LogFormat;
  try {
    format = readLogSettings(process.env).format;
  } catch (err) {
    fail((err as Error).message);
  }
  const log = createAgentLogger(config, format);
  const metrics = createMetrics('node-agent', {
    runMetrics: false,
    eventLoopPrecisionMs: AGENT_EVENT_LOOP_PRECISION_MS,
  });
  let app: INestApplicationContext;
  try {
    const onNatsLost = (message: string): void => {
      log.fatal({}, message);
      fail(message);
    };
    app = await NestFactory.createApplicationContext(
      AgentModule.forRoot(config, log, onNatsLost, registerAgentMetrics(metrics.registry)),
      // No Nest logger until it is built: a start-up failure is one line on stderr (`fail`).
      { logger: false, abortOnError: false },
    );
    app.useLogger(app.get(NestLogger));
  } catch (err) {
    fail((err as Error).message);
  }
  const checks = [natsCheck(app.get<NatsConnection>(NATS_CONNECTION))];
  stopOnSignals(app, log);
  await serveHealthChecks({ port: config.healthPort, checks, metrics }, (message) => log.warn(message));
}

// Nest's own shutdown hooks re-raise the signal after closing (exit 143); a requested stop exits 0.
function stopOnSignals(app: INestApplicationContext, log: AgentLogger): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, `received ${signal}`);
    app.close().then(
      () => process.exit(0),
      (err: Error) => {
        log.error({ err: err.message }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

process.on('unhandledRejection', (reason) => {
  process.stderr.write(
    `node-agent: unexpected error: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}\n`,
  );
  process.exit(1);
});

void main();
