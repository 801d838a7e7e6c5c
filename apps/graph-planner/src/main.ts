import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Logger as NestLogger } from 'nestjs-pino';
import { executionSubjects } from '@granule/contracts';
import { connectNats } from '@granule/messaging';
import { GranuleNatsServer } from '@granule/nats-endpoints';
import {
  createMetrics,
  natsCheck,
  postgresCheck,
  registerPlannerMetrics,
  serveHealthChecks,
} from '@granule/observability';
import { createLogger, exitService, readLogSettings, runService } from '@granule/service-kit';
import { loadGraphPlannerConfig } from './graph-planner.config';
import { GraphPlannerModule } from './graph-planner.module';
import { openDatabase } from './graph-planner.startup';
import { GRAPH_PLANNER_QUEUE } from './plan.controller';

// Operators get one line on failure: what is wrong and what to do, never a stack trace.
runService('graph-planner', async () => {
  const config = loadGraphPlannerConfig(process.env);
  const logger = createLogger('graph-planner', readLogSettings(process.env));
  const dataSource = await openDatabase(config);
  const nats = await connectNats(config, 'graph-planner', {
    onLost: (message) => exitService('graph-planner', message),
  }).catch(async (err: unknown) => {
    await dataSource.destroy();
    throw err;
  });
  const metrics = createMetrics('graph-planner', { runMetrics: false });
  const planner = registerPlannerMetrics(metrics.registry);
  const app = await NestFactory.createMicroservice(
    GraphPlannerModule.forRoot({ config, dataSource, nats, logger, metrics: planner }),
    {
      strategy: new GranuleNatsServer({
        connection: nats,
        prefix: config.subjectPrefix,
        queue: GRAPH_PLANNER_QUEUE,
        onInternalError: (pattern, err) => logger.error({ pattern, err: (err as Error).message }, 'request failed'),
      }),
      abortOnError: false,
      // Until the app is built, failures are main's one line (runService), not Nest's stack trace.
      logger: false,
    },
  );
  app.useLogger(app.get(NestLogger));
  app.enableShutdownHooks();
  await app.listen();
  logger.info(`answering ${executionSubjects(config.subjectPrefix).planner.plan} (queue group ${GRAPH_PLANNER_QUEUE})`);
  const checks = [natsCheck(nats), postgresCheck(dataSource)];
  await serveHealthChecks({ port: config.healthPort, checks, metrics }, (message) => logger.warn(message));
});
