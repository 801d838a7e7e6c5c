import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Logger as NestLogger } from 'nestjs-pino';
import { EVENT_STORE_MIGRATIONS } from '@granule/event-store';
import { connectNats, connectRedis } from '@granule/messaging';
import { GranuleNatsServer } from '@granule/nats-endpoints';
import {
  createMetrics,
  natsCheck,
  outcomeOfCode,
  postgresCheck,
  redisCheck,
  registerOrchestratorMetrics,
  registerRequestMetrics,
  serveHealthChecks,
} from '@granule/observability';
import { PLAN_STORE_MIGRATIONS } from '@granule/plan-store';
import { createLogger, exitService, openDatabase, readLogSettings, runService } from '@granule/service-kit';
import { configWarnings, loadOrchestratorConfig } from './orchestrator.config';
import { OrchestratorModule } from './orchestrator.module';
import { formatLeaseHolder, newLeaseHolder } from './runs/adapters/run-lease.adapter';

/** Replicas share the run queries and agent registrations through this queue group. */
const ORCHESTRATOR_QUEUE = 'orchestrator';

runService('orchestrator', async () => {
  const config = loadOrchestratorConfig(process.env);
  const logger = createLogger('orchestrator', { ...readLogSettings(process.env), level: config.logLevel });
  for (const warning of configWarnings(config)) logger.warn({}, warning);
  const metrics = createMetrics('orchestrator');
  const counters = registerOrchestratorMetrics(metrics.registry);
  const requests = registerRequestMetrics(metrics.registry);
  const holder = newLeaseHolder(config.instanceId);
  const dataSource = await openDatabase({
    url: config.databaseUrl,
    migrations: [...EVENT_STORE_MIGRATIONS, ...PLAN_STORE_MIGRATIONS],
    runMigrations: config.runMigrations,
  });
  const nats = await connectNats(config, formatLeaseHolder(holder), {
    onLost: (message) => {
      logger.fatal({}, message);
      exitService('orchestrator', message);
    },
  });
  const redis = await connectRedis(config.redisUrl);
  const app = await NestFactory.createMicroservice(
    OrchestratorModule.forRoot({
      config,
      nats,
      redis,
      dataSource,
      logger,
      holder,
      granuleMetrics: metrics,
      metrics: counters,
    }),
    {
      strategy: new GranuleNatsServer({
        connection: nats,
        prefix: config.subjectPrefix,
        queue: ORCHESTRATOR_QUEUE,
        onInternalError: (pattern, err) => logger.error({ pattern, err: (err as Error).message }, 'request failed'),
        onAnswered: (pattern, code, seconds) => requests.answered('nats', pattern, outcomeOfCode(code), seconds),
      }),
      // Until the app is built, failures are main's one line (runService), not Nest's stack trace.
      logger: false,
      abortOnError: false,
    },
  );
  app.useLogger(app.get(NestLogger));
  await app.listen();
  logger.info(
    { instance: config.instanceId, incarnation: holder.incarnation, prefix: config.subjectPrefix },
    'orchestrator started',
  );
  const checks = [natsCheck(nats), postgresCheck(dataSource), redisCheck(redis)];
  await serveHealthChecks({ port: config.healthPort, checks, metrics }, (message) => logger.warn(message));
  const close = async (): Promise<void> => {
    await app.close();
    await nats.drain();
    redis.disconnect();
    await dataSource.destroy();
    process.exit(0);
  };
  process.once('SIGTERM', () => void close());
  process.once('SIGINT', () => void close());
});
