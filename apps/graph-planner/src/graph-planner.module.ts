import { Inject, Injectable, Logger, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { DataSource } from 'typeorm';
import { ConfigStoreClient } from '@granule/config-store-client';
import { PlanStore } from '@granule/plan-store';
import { ConfigStoreInputs } from './environment-plan-inputs';
import { GraphPlannerConfig } from './graph-planner.config';
import { NATS_CONNECTION, NatsPlanResponder } from './nats-plan.responder';
import { PlanRequestHandler } from './plan-request.handler';

/** What `main.ts` opened before Nest starts (so a bad URL is one clear line, not a Nest stack trace). */
export interface GraphPlannerConnections {
  config: GraphPlannerConfig;
  dataSource: DataSource;
  nats: NatsConnection;
}

/** Closes NATS and the database after the responder has drained. */
@Injectable()
class ConnectionsCloser implements OnApplicationShutdown {
  constructor(
    @Inject(NATS_CONNECTION) private readonly nats: NatsConnection,
    private readonly dataSource: DataSource,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    if (!this.nats.isClosed()) await this.nats.drain();
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}

@Module({})
export class GraphPlannerModule {
  static forRoot(connections: GraphPlannerConnections): DynamicModule {
    const logger = new Logger('graph-planner');
    return {
      module: GraphPlannerModule,
      providers: [
        { provide: GraphPlannerConfig, useValue: connections.config },
        { provide: DataSource, useValue: connections.dataSource },
        { provide: NATS_CONNECTION, useValue: connections.nats },
        { provide: PlanStore, useFactory: (dataSource: DataSource) => new PlanStore(dataSource), inject: [DataSource] },
        {
          provide: PlanRequestHandler,
          useFactory: (store: PlanStore, nats: NatsConnection, config: GraphPlannerConfig) =>
            new PlanRequestHandler(
              store,
              (level, line) => (level === 'warn' ? logger.warn(line) : logger.error(line)),
              new ConfigStoreInputs(new ConfigStoreClient(nats, { prefix: config.subjectPrefix })),
            ),
          inject: [PlanStore, NATS_CONNECTION, GraphPlannerConfig],
        },
        NatsPlanResponder,
        ConnectionsCloser,
      ],
    };
  }
}
