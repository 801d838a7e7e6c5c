import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { LogLevel } from '@nestjs/common';
import { INPUT_LIMITS } from '@granule/core';
import { ConfigStoreHttpModule } from '../app.module';
import type { ConfigStoreApi } from '../transport/config-store.api';
import { jsonBodyMiddleware } from './json-body.middleware';

/** The HTTP API on `host:port`, over the same operations as NATS. */
export async function startHttpApi(
  api: ConfigStoreApi,
  options: { token: string; port: number; host: string; logger?: LogLevel[] | false; bodyLimitBytes?: number },
): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(ConfigStoreHttpModule.register(api, options.token), {
    logger: options.logger ?? ['log', 'warn', 'error'],
    // Bodies are read by jsonBodyMiddleware: bounded, depth-checked, refusals in the API's format.
    bodyParser: false,
  });
  app.use(jsonBodyMiddleware(options.bodyLimitBytes ?? INPUT_LIMITS.httpBodyBytes));
  await app.listen(options.port, options.host);
  return app;
}
