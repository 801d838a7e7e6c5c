import { Module } from '@nestjs/common';
import type { DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { ApiExceptionFilter } from './http/api-exception.filter';
import { API_TOKEN, ApiTokenGuard } from './http/api-token.guard';
import { ConfigStoreController, HealthController } from './http/config-store.controller';
import { ConfigStoreApi } from './transport/config-store.api';

/**
 * Nest wiring of the HTTP API. The DataSource and NATS connection are opened (and their
 * failures explained) by `main.ts` before Nest starts, so the module receives ready objects.
 */
@Module({})
export class ConfigStoreHttpModule {
  static register(api: ConfigStoreApi, apiToken: string): DynamicModule {
    return {
      module: ConfigStoreHttpModule,
      controllers: [ConfigStoreController, HealthController],
      providers: [
        { provide: ConfigStoreApi, useValue: api },
        { provide: API_TOKEN, useValue: apiToken },
        ApiTokenGuard,
        { provide: APP_FILTER, useClass: ApiExceptionFilter },
      ],
    };
  }
}
