import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { OpenAPIObject } from '@nestjs/swagger';

/** Where the OpenAPI document is served (public: it describes the API, it holds no data). */
export const OPENAPI_PATH = '/openapi.json';
/** Where Swagger UI shows it. */
export const API_DOCS_PATH = '/docs';

/** The HTTP API's OpenAPI document, generated from the controllers' decorators (ADR 0032). */
export function openApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Granule HTTP API')
    .setDescription(
      'Configuration (releases, plugins, clusters, nodes, strategies) and runs. Every route but `/health` and ' +
        'this document needs `Authorization: Bearer <GRANULE_API_TOKEN>` (or `X-Granule-Token`). Errors are ' +
        '`{error: {code, message, diagnostics?}}`.',
    )
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'GRANULE_API_TOKEN' })
    .build();
  // Routes are tagged by what they are about (releases, runs, ...), not by the controller's class.
  return SwaggerModule.createDocument(app, config, { autoTagControllers: false });
}

/** Serves the document at `OPENAPI_PATH` and Swagger UI at `API_DOCS_PATH`, outside the token guard. */
export function serveOpenApi(app: INestApplication): void {
  const document = openApiDocument(app);
  SwaggerModule.setup(API_DOCS_PATH.slice(1), app, document, {
    jsonDocumentUrl: OPENAPI_PATH.slice(1),
    raw: ['json'],
  });
}
