import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { EVENT_STORE_MIGRATIONS } from '@granule/event-store';
import { connectNats, connectRedis } from '@granule/messaging';
import { createMetrics, natsCheck, postgresCheck, redisCheck, serveHealthChecks } from '@granule/observability';
import { PLAN_STORE_MIGRATIONS } from '@granule/plan-store';
import { createLogger, openDatabase, runService } from '@granule/service-kit';
import { loadOrchestratorConfig } from './orchestrator.config';
import { OrchestratorModule } from './orchestrator.module';
import { RunMetricsFeed } from './run-metrics';

runService('orchestrator', async () => {
  const config = loadOrchestratorConfig(process.env);
  const logger = createLogger('orchestrator', config.logLevel);
  const dataSource = await openDatabase({
    url: config.databaseUrl,
    migrations: [...EVENT_STORE_MIGRATIONS, ...PLAN_STORE_MIGRATIONS],
    runMigrations: config.runMigrations,
  });
  const nats = await connectNats(config.natsUrl, config.instanceId);
  const redis = await connectRedis(config.redisUrl);
  const app = await NestFactory.createApplicationContext(
    OrchestratorModule.forRoot({ config, nats, redis, dataSource, logger }),
    { logger: ['error', 'warn'], abortOnError: false },
  );
  const metrics = createMetrics('orchestrator');
  new RunMetricsFeed(metrics, { nats, dataSource, logger, subjectPrefix: config.subjectPrefix }).start();
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
