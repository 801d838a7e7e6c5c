import { Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { LoggerModule } from 'nestjs-pino';
import { CallerGuard } from '@granule/nats-endpoints';
import { nestLoggerParams, type Logger } from '@granule/service-kit';
import { CallerContextInterceptor } from './audit/caller-context';
import { ApiExceptionFilter } from './http/api-exception.filter';
import { httpCallProps } from './http/request-metrics.middleware';
import type { ApiCaller } from './config/config.service';
import { API_CALLERS, ApiTokenGuard } from './http/api-token.guard';
import { ConfigStoreController, HealthController } from './http/config-store.controller';
import { RunsController } from './http/runs.controller';
import { StreamSlots } from './http/stream-slots';
import { RunsGateway } from './runs/runs-gateway';
import { ConfigStoreApi } from './transport/config-store.api';
import { ConfigStoreNatsController } from './transport/config-store.nats-controller';

/**
 * Nest wiring of the config-store: its NATS endpoints, and the HTTP API when a token is set.
 * The DataSource and NATS connection are opened (and their failures explained) before Nest
 * starts, so the module receives ready objects.
 */
@Module({})
export class ConfigStoreModule {
  /**
   * With `logger`, Nest's lines and every HTTP request are logged through it (nestjs-pino); with
   * `runs`, the HTTP API has the runs routes (ADR 0032), its streams bounded by `runs.streams`.
   */
  static register(
    api: ConfigStoreApi,
    apiCallers: readonly ApiCaller[],
    logger?: Logger,
    runs?: { gateway: RunsGateway; streams: StreamSlots },
  ): DynamicModule {
    const on = apiCallers.length > 0;
    const http = on ? [ConfigStoreController, HealthController, ...(runs ? [RunsController] : [])] : [];
    return {
      module: ConfigStoreModule,
      imports: logger ? [LoggerModule.forRoot(nestLoggerParams(logger, { callProps: httpCallProps }))] : [],
      controllers: [ConfigStoreNatsController, ...http],
      providers: [
        { provide: ConfigStoreApi, useValue: api },
        ...(runs
          ? [
              { provide: RunsGateway, useValue: runs.gateway },
              { provide: StreamSlots, useValue: runs.streams },
            ]
          : []),
        ...(on ? [{ provide: API_CALLERS, useValue: apiCallers }, ApiTokenGuard] : []),
        { provide: APP_FILTER, useClass: ApiExceptionFilter },
        { provide: APP_GUARD, useClass: CallerGuard },
        { provide: APP_INTERCEPTOR, useClass: CallerContextInterceptor },
      ],
    };
  }
}
