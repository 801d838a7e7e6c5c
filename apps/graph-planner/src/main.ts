import 'reflect-metadata';
import { ConsoleLogger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createMetrics, natsCheck, postgresCheck, serveHealthChecks } from '@granule/observability';
import { runService } from '@granule/service-kit';
import { loadGraphPlannerConfig } from './graph-planner.config';
import { GraphPlannerModule } from './graph-planner.module';
import { connectNats, openDatabase } from './graph-planner.startup';

// Operators get one line on failure: what is wrong and what to do, never a stack trace.
runService('graph-planner', async () => {
  const config = loadGraphPlannerConfig(process.env);
  const dataSource = await openDatabase(config);
  const nats = await connectNats(config).catch(async (err: unknown) => {
    await dataSource.destroy();
    throw err;
  });
  const app = await NestFactory.createApplicationContext(GraphPlannerModule.forRoot({ config, dataSource, nats }), {
    abortOnError: false,
    // JSON lines, like the orchestrator's and the agents' logs.
    logger: new ConsoleLogger({ json: true, colors: false, logLevels: ['log', 'warn', 'error'] }),
  });
  app.enableShutdownHooks();
  const checks = [natsCheck(nats), postgresCheck(dataSource)];
  const metrics = createMetrics('graph-planner', { runMetrics: false });
  await serveHealthChecks({ port: config.healthPort, checks, metrics }, (message) =>
    process.stderr.write(`graph-planner: ${message}\n`),
  );
});
