import 'reflect-metadata';
import { ConsoleLogger, Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { executionSubjects } from '@granule/contracts';
import { connectNats } from '@granule/messaging';
import { GranuleNatsServer } from '@granule/nats-endpoints';
import { createMetrics, natsCheck, postgresCheck, serveHealthChecks } from '@granule/observability';
import { exitService, runService } from '@granule/service-kit';
import { loadGraphPlannerConfig } from './graph-planner.config';
import { GraphPlannerModule } from './graph-planner.module';
import { openDatabase } from './graph-planner.startup';
import { GRAPH_PLANNER_QUEUE } from './plan.controller';

// Operators get one line on failure: what is wrong and what to do, never a stack trace.
runService('graph-planner', async () => {
  const config = loadGraphPlannerConfig(process.env);
  const dataSource = await openDatabase(config);
  const nats = await connectNats(config, 'graph-planner', {
    onLost: (message) => exitService('graph-planner', message),
  }).catch(async (err: unknown) => {
    await dataSource.destroy();
    throw err;
  });
  // JSON lines, like the orchestrator's and the agents' logs.
  const logger = new ConsoleLogger({ json: true, colors: false, logLevels: ['log', 'warn', 'error'] });
  const app = await NestFactory.createMicroservice(GraphPlannerModule.forRoot({ config, dataSource, nats }), {
    strategy: new GranuleNatsServer({
      connection: nats,
      prefix: config.subjectPrefix,
      queue: GRAPH_PLANNER_QUEUE,
      onInternalError: (pattern, err) => logger.error(`${pattern} failed: ${(err as Error).message}`),
    }),
    abortOnError: false,
    logger,
  });
  app.enableShutdownHooks();
  await app.listen();
  new Logger('graph-planner').log(
    `answering ${executionSubjects(config.subjectPrefix).planner.plan} (queue group ${GRAPH_PLANNER_QUEUE})`,
  );
  const checks = [natsCheck(nats), postgresCheck(dataSource)];
  const metrics = createMetrics('graph-planner', { runMetrics: false });
  await serveHealthChecks({ port: config.healthPort, checks, metrics }, (message) =>
    process.stderr.write(`graph-planner: ${message}\n`),
  );
});
