import { Inject, Module } from '@nestjs/common';
import type { DynamicModule, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { OrchestratorService } from './orchestrator.service';
import type { OrchestratorDeps } from './orchestrator.service';

const DEPS = Symbol('ORCHESTRATOR_DEPS');

class OrchestratorLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(@Inject(OrchestratorService) private readonly service: OrchestratorService) {}

  onApplicationBootstrap(): Promise<void> {
    return this.service.start();
  }

  onApplicationShutdown(): Promise<void> {
    return this.service.stop();
  }
}

/** Nest wiring only: the connections are opened in main.ts and handed in. */
@Module({})
export class OrchestratorModule {
  static forRoot(deps: OrchestratorDeps): DynamicModule {
    return {
      module: OrchestratorModule,
      providers: [
        { provide: DEPS, useValue: deps },
        {
          provide: OrchestratorService,
          useFactory: (d: OrchestratorDeps) => new OrchestratorService(d),
          inject: [DEPS],
        },
        OrchestratorLifecycle,
      ],
    };
  }
}
