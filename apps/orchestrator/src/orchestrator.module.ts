import { Inject, Injectable, Module } from '@nestjs/common';
import type { DynamicModule, OnModuleInit } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Redis } from 'ioredis';
import type { DataSource } from 'typeorm';
import { TaskLogStore } from '@granule/event-store';
import { LoggerModule } from 'nestjs-pino';
import { ensureArtifactsBucket } from '@granule/artifacts';
import { ensureExecutionStreams, ensureInputsBucket, JetStreamConsumers } from '@granule/messaging';
import { CallerGuard, ReplyExceptionFilter } from '@granule/nats-endpoints';
import type { GranuleMetrics, OrchestratorMetrics } from '@granule/observability';
import { nestLoggerParams, type Logger } from '@granule/service-kit';
import { AgentAlertsController, AgentRegistryController } from './agents/agent-registry.controller';
import { PresenceIntake } from './agents/presence-intake';
import { CommandIntake } from './commands/command-intake';
import { OrchestratorConfig } from './orchestrator.config';
import { runMetricsFeedProvider } from './metrics/run-metrics.provider';
import { DATA_SOURCE, GRANULE_METRICS, LEASE_HOLDER, LOGGER, METRICS, NATS, REDIS } from './orchestrator.tokens';
import { outboxProviders } from './outbox/outbox.providers';
import { ResultIntake } from './results/result-intake';
import type { LeaseHolder } from './runs/adapters/run-lease.adapter';
import { coordinatorProviders } from './runs/coordinators.providers';
import { RunQueries } from './runs/run-queries';
import { RunQueriesController } from './runs/run-queries.controller';
import { RunTicker } from './runs/run-ticker';
import { TaskLogIntake } from './logs/task-log-intake';
import { TaskQueries } from './logs/task-queries';
import { TaskQueriesController } from './logs/task-queries.controller';

/** What `main.ts` opened before Nest starts (a bad URL is one clear line, not a Nest stack trace). */
export interface OrchestratorConnections {
  config: OrchestratorConfig;
  nats: NatsConnection;
  redis: Redis;
  dataSource: DataSource;
  logger: Logger;
  /** The registry of /metrics, which the health server serves. */
  granuleMetrics: GranuleMetrics;
  /** The orchestrator's counters in that registry. */
  metrics: OrchestratorMetrics;
  /** Who this process is in run leases (its replica's name and its incarnation). */
  holder: LeaseHolder;
}

/** Creates the execution streams (commands, dispatch, results) and the inputs bucket before anything uses them. */
@Injectable()
class ExecutionStreams implements OnModuleInit {
  constructor(
    @Inject(NATS) private readonly nats: NatsConnection,
    @Inject(OrchestratorConfig) private readonly config: OrchestratorConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    await ensureExecutionStreams(this.nats, this.config.subjectPrefix);
    await ensureInputsBucket(this.nats, this.config.subjectPrefix);
    // A deploy of plugin folders stores their files before any config-store may have started.
    await ensureArtifactsBucket(this.nats, this.config.subjectPrefix);
  }
}

/**
 * The orchestrator's wiring: commands in (CommandIntake), results in (ResultIntake), task output
 * in (TaskLogIntake), all three on the one JetStreamConsumers, the coordinators on the decider driver and their adapters (the dispatcher
 * among them), the tick (RunTicker), the outbox and what goes with it (OutboxKeeper with the
 * publisher, the status projector and the presence watcher), the run metrics feed, and the
 * request/reply endpoints (run and task queries, agent registration and alerts).
 */
@Module({})
export class OrchestratorModule {
  static forRoot(connections: OrchestratorConnections): DynamicModule {
    return {
      module: OrchestratorModule,
      // Nest's own lines through the service's logger, warnings and errors only (as before).
      imports: [LoggerModule.forRoot(nestLoggerParams(connections.logger, { nestLevel: 'warn' }))],
      controllers: [RunQueriesController, TaskQueriesController, AgentRegistryController, AgentAlertsController],
      providers: [
        { provide: OrchestratorConfig, useValue: connections.config },
        { provide: NATS, useValue: connections.nats },
        { provide: REDIS, useValue: connections.redis },
        { provide: DATA_SOURCE, useValue: connections.dataSource },
        { provide: LOGGER, useValue: connections.logger },
        { provide: GRANULE_METRICS, useValue: connections.granuleMetrics },
        { provide: METRICS, useValue: connections.metrics },
        { provide: LEASE_HOLDER, useValue: connections.holder },
        ExecutionStreams,
        {
          // Every JetStream consumer of the orchestrator (commands, results, task output); stopped on module destroy.
          provide: JetStreamConsumers,
          useFactory: (nats: NatsConnection, logger: Logger) => new JetStreamConsumers(nats, logger),
          inject: [NATS, LOGGER],
        },
        PresenceIntake,
        ...coordinatorProviders,
        ResultIntake,
        ...outboxProviders,
        CommandIntake,
        RunTicker,
        RunQueries,
        { provide: TaskLogStore, useFactory: (ds: DataSource) => new TaskLogStore(ds), inject: [DATA_SOURCE] },
        TaskQueries,
        TaskLogIntake,
        runMetricsFeedProvider,
        { provide: APP_FILTER, useClass: ReplyExceptionFilter },
        { provide: APP_GUARD, useClass: CallerGuard },
      ],
    };
  }
}
