import { Inject, Injectable, Logger, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import type { NatsConnection } from '@nats-io/transport-node';
import { DataSource } from 'typeorm';
import { ConfigStoreClient } from '@granule/config-store-client';
import { StoredInputs } from '@granule/messaging';
import { CallerGuard, ReplyExceptionFilter } from '@granule/nats-endpoints';
import { PlanStore } from '@granule/plan-store';
import { ConfigStoreInputs } from './environment-plan-inputs';
import { GraphPlannerConfig } from './graph-planner.config';
import { LoggerModule } from 'nestjs-pino';
import type { PlannerMetrics } from '@granule/observability';
import { nestLoggerParams, type Logger as ServiceLogger } from '@granule/service-kit';
import { PLANNER_METRICS, PlanController } from './plan.controller';
import { PlanRequestHandler } from './plan-request.handler';

/** Injection token of the service's NATS connection. */
export const NATS_CONNECTION = Symbol('NATS_CONNECTION');

/** What `main.ts` opened before Nest starts (so a bad URL is one clear line, not a Nest stack trace). */
export interface GraphPlannerConnections {
  config: GraphPlannerConfig;
  dataSource: DataSource;
  nats: NatsConnection;
  /** The service's logger; Nest's lines go through it (nestjs-pino). */
  logger: ServiceLogger;
  metrics: PlannerMetrics;
}

/** Closes NATS and the database after the endpoint has drained. */
@Injectable()
class ConnectionsCloser implements OnApplicationShutdown {
  constructor(
    @Inject(NATS_CONNECTION) private readonly nats: NatsConnection,
    @Inject(DataSource) private readonly dataSource: DataSource,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    if (!this.nats.isClosed()) await this.nats.drain();
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}

/** graph-planner's wiring: the plan endpoint, the plan store, config-store for environments. */
@Module({})
export class GraphPlannerModule {
  static forRoot(connections: GraphPlannerConnections): DynamicModule {
    const logger = new Logger('graph-planner');
    return {
      module: GraphPlannerModule,
      imports: [LoggerModule.forRoot(nestLoggerParams(connections.logger))],
      controllers: [PlanController],
      providers: [
        { provide: GraphPlannerConfig, useValue: connections.config },
        { provide: DataSource, useValue: connections.dataSource },
        { provide: NATS_CONNECTION, useValue: connections.nats },
        { provide: PLANNER_METRICS, useValue: connections.metrics },
        { provide: PlanStore, useFactory: (dataSource: DataSource) => new PlanStore(dataSource), inject: [DataSource] },
        {
          provide: PlanRequestHandler,
          useFactory: (store: PlanStore, nats: NatsConnection, config: GraphPlannerConfig) =>
            new PlanRequestHandler(
              store,
              (level, line) => (level === 'warn' ? logger.warn(line) : logger.error(line)),
              new ConfigStoreInputs(new ConfigStoreClient(nats, { prefix: config.subjectPrefix })),
              new StoredInputs(nats, config.subjectPrefix),
            ),
          inject: [PlanStore, NATS_CONNECTION, GraphPlannerConfig],
        },
        { provide: APP_FILTER, useClass: ReplyExceptionFilter },
        { provide: APP_GUARD, useClass: CallerGuard },
        ConnectionsCloser,
      ],
    };
  }
}
