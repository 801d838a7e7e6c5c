import type { IncomingMessage } from 'node:http';
import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  Param,
  Patch,
  Post,
  Put,
  Query,
  Req,
  UseGuards,
} from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiCreatedResponse,
  ApiOperation,
  ApiPayloadTooLargeResponse,
  ApiTags,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { InvalidInputError } from '@granule/core';
import { ConfigStoreApi } from '../transport/config-store.api';
import { ApiTokenGuard } from './api-token.guard';

type QueryParams = Record<string, unknown>;

/** Refuses query parameters a route does not know, naming the ones it does. */
export function checkQuery(query: QueryParams, allowed: readonly string[]): void {
  const unknown = Object.keys(query).filter((k) => !allowed.includes(k));
  if (unknown.length > 0) {
    throw new InvalidInputError(
      unknown.map((k) => ({
        severity: 'error',
        code: 'CONFIG_BAD_FIELD',
        path: k,
        message: `unknown query parameter '${k}' (expected ${allowed.join(', ')})`,
      })),
    );
  }
}

/** `start` / `end` (Fuel's `start_task` / `end_task` too); any other parameter is refused. */
export function rangeQuery(query: QueryParams, extra: readonly string[] = []): Record<string, unknown> {
  checkQuery(query, ['start', 'end', 'start_task', 'end_task', ...extra]);
  const out: Record<string, unknown> = {};
  const start = query.start ?? query.start_task;
  const end = query.end ?? query.end_task;
  if (start !== undefined) out.start = start;
  if (end !== undefined) out.end = end;
  return out;
}

/** The body merged with route parameters; a body that is not an object is passed on to be refused by validation. */
function withBody(body: unknown, params: Record<string, unknown>): unknown {
  if (body === undefined || body === null) return params;
  return typeof body === 'object' && !Array.isArray(body) ? { ...(body as object), ...params } : body;
}

/** `PUT deployment_tasks` takes Fuel's list of records, or `{tasks: [...]}`. */
function taskList(body: unknown): unknown {
  return Array.isArray(body)
    ? body
    : typeof body === 'object' && body !== null
      ? (body as { tasks?: unknown }).tasks
      : body;
}

/**
 * HTTP REST for operators and tools; every route calls the same operations as NATS. The token
 * has an operator's rights, so `credential.record` (admins only) has no route here.
 */
@ApiBearerAuth()
@ApiUnauthorizedResponse({ description: 'No API token, or not the configured one.' })
@Controller()
@UseGuards(ApiTokenGuard)
export class ConfigStoreController {
  constructor(@Inject(ConfigStoreApi) private readonly api: ConfigStoreApi) {}

  @Get('releases')
  @ApiTags('releases')
  @ApiOperation({ summary: 'List installed releases.' })
  listReleases() {
    return this.api.handle('release.list', {});
  }

  @Post('releases')
  @ApiTags('releases')
  @ApiOperation({ summary: 'Install a release.' })
  installRelease(@Body() body: unknown) {
    return this.api.handle('release.install', body);
  }

  /**
   * Stores deployment files (the deterministic tar of `deployment_scripts/`) under their
   * SHA-256, streamed from the request body; `Content-Length` is required. An install then
   * names them with `artifact_digest` (ADR 0026).
   */
  @Put('artifacts/:digest')
  @ApiTags('artifacts')
  @ApiOperation({
    summary: 'Store deployment files (a tar) under their SHA-256; Content-Length required.',
    description:
      "The body is the deterministic tar of a package's `deployment_scripts/` (no `.tar.gz`: unpack it " +
      'and pack that folder as `granule plugin install` does), streamed, at most 512 MiB. The stored ' +
      'bytes must hash to `digest`, or nothing is kept. Then `POST /plugins` or `POST /releases` with ' +
      '`artifact_digest: <digest>` installs the package (README: "Installing a package over HTTP").',
  })
  @ApiCreatedResponse({ description: 'The deployment files are stored under their SHA-256.' })
  @ApiPayloadTooLargeResponse({
    description: 'ARTIFACT_TOO_LARGE: Content-Length over 512 MiB (the package size limit).',
  })
  @HttpCode(201)
  putArtifact(@Param('digest') digest: string, @Req() req: IncomingMessage) {
    return this.api.storeArtifact(digest, req.headers['content-length'], req);
  }

  @Get('releases/:id')
  @ApiTags('releases')
  @ApiOperation({ summary: 'Show a release.' })
  getRelease(@Param('id') id: string) {
    return this.api.handle('release.get', { id });
  }

  @Delete('releases/:id')
  @ApiTags('releases')
  @ApiOperation({ summary: 'Remove a release.' })
  removeRelease(@Param('id') id: string) {
    return this.api.handle('release.remove', { id });
  }

  @Get('releases/:id/deployment_tasks')
  @ApiTags('releases')
  @ApiOperation({ summary: "A release's deployment tasks (start/end bound the graph)." })
  async getReleaseTasks(@Param('id') id: string, @Query() query: QueryParams) {
    return (
      await this.api.handle('tasks.get', {
        scope: 'release',
        id,
        ...rangeQuery(query, ['graph']),
        ...(query.graph !== undefined ? { graph: query.graph } : {}),
      })
    ).tasks;
  }

  @Put('releases/:id/deployment_tasks')
  @ApiTags('releases')
  @ApiOperation({ summary: "Replace a release's deployment tasks." })
  async putReleaseTasks(@Param('id') id: string, @Query() query: QueryParams, @Body() body: unknown) {
    // `graph` names the graph replaced; without it, the default graph (never another one).
    checkQuery(query, ['graph']);
    return (
      await this.api.handle('tasks.put', {
        scope: 'release',
        id,
        tasks: taskList(body),
        ...(query.graph !== undefined ? { graph: query.graph } : {}),
      })
    ).tasks;
  }

  @Get('plugins')
  @ApiTags('plugins')
  @ApiOperation({ summary: 'List installed plugins.' })
  listPlugins() {
    return this.api.handle('plugin.list', {});
  }

  @Post('plugins')
  @ApiTags('plugins')
  @ApiOperation({ summary: 'Install a plugin.' })
  installPlugin(@Body() body: unknown) {
    return this.api.handle('plugin.install', body);
  }

  @Get('plugins/:id')
  @ApiTags('plugins')
  @ApiOperation({ summary: 'Show a plugin.' })
  getPlugin(@Param('id') id: string) {
    return this.api.handle('plugin.get', { id });
  }

  @Delete('plugins/:id')
  @ApiTags('plugins')
  @ApiOperation({ summary: 'Remove a plugin.' })
  removePlugin(@Param('id') id: string) {
    return this.api.handle('plugin.remove', { id });
  }

  @Get('clusters')
  @ApiTags('clusters')
  @ApiOperation({ summary: 'List clusters (environments).' })
  listClusters() {
    return this.api.handle('env.list', {});
  }

  @Post('clusters')
  @ApiTags('clusters')
  @ApiOperation({ summary: 'Create a cluster.' })
  createCluster(@Body() body: unknown) {
    return this.api.handle('env.create', body);
  }

  @Get('clusters/:id')
  @ApiTags('clusters')
  @ApiOperation({ summary: 'Show a cluster.' })
  getCluster(@Param('id') id: string) {
    return this.api.handle('env.get', { id });
  }

  @Patch('clusters/:id')
  @ApiTags('clusters')
  @ApiOperation({ summary: "Change a cluster's settings or release." })
  updateCluster(@Param('id') id: string, @Body() body: unknown) {
    return this.api.handle('env.update', withBody(body, { id }));
  }

  @Post('clusters/:id/plugins')
  @ApiTags('clusters')
  @ApiOperation({ summary: 'Enable a plugin on a cluster.' })
  @HttpCode(200)
  enablePlugin(@Param('id') environment: string, @Body() body: unknown) {
    return this.api.handle('env.plugin.enable', withBody(body, { environment }));
  }

  @Delete('clusters/:id/plugins/:plugin')
  @ApiTags('clusters')
  @ApiOperation({ summary: 'Disable a plugin on a cluster.' })
  disablePlugin(@Param('id') environment: string, @Param('plugin') plugin: string) {
    return this.api.handle('env.plugin.disable', { environment, plugin });
  }

  @Get('clusters/:id/deployment_tasks')
  @ApiTags('clusters')
  @ApiOperation({ summary: "A cluster's deployment tasks." })
  async getClusterTasks(@Param('id') id: string, @Query() query: QueryParams) {
    return (await this.api.handle('tasks.get', { scope: 'environment', id, ...rangeQuery(query) })).tasks;
  }

  @Put('clusters/:id/deployment_tasks')
  @ApiTags('clusters')
  @ApiOperation({ summary: "Replace a cluster's deployment tasks." })
  async putClusterTasks(@Param('id') id: string, @Query() query: QueryParams, @Body() body: unknown) {
    checkQuery(query, ['graph']);
    return (
      await this.api.handle('tasks.put', {
        scope: 'environment',
        id,
        tasks: taskList(body),
        ...(query.graph !== undefined ? { graph: query.graph } : {}),
      })
    ).tasks;
  }

  @Get('clusters/:id/graphs/:type')
  @ApiTags('clusters')
  @ApiOperation({ summary: "A cluster's graph of the given type." })
  getClusterGraph(@Param('id') id: string, @Param('type') graph: string, @Query() query: QueryParams) {
    return this.api.handle('tasks.get', { scope: 'environment', id, graph, ...rangeQuery(query) });
  }

  @Get('nodes')
  @ApiTags('nodes')
  @ApiOperation({ summary: 'List nodes (cluster= filters).' })
  listNodes(@Query() query: QueryParams) {
    checkQuery(query, ['cluster']);
    return this.api.handle('node.list', query.cluster === undefined ? {} : { environment: query.cluster });
  }

  @Post('nodes')
  @ApiTags('nodes')
  @ApiOperation({ summary: 'Add a node.' })
  addNode(@Body() body: unknown) {
    return this.api.handle('node.add', body);
  }

  @Get('nodes/:uid')
  @ApiTags('nodes')
  @ApiOperation({ summary: 'Show a node.' })
  getNode(@Param('uid') uid: string) {
    return this.api.handle('node.get', { uid });
  }

  @Patch('nodes/:uid')
  @ApiTags('nodes')
  @ApiOperation({ summary: 'Change a node.' })
  updateNode(@Param('uid') uid: string, @Body() body: unknown) {
    return this.api.handle('node.update', withBody(body, { uid }));
  }

  @Put('nodes/:uid/assignment')
  @ApiTags('nodes')
  @ApiOperation({ summary: 'Assign a node to a cluster with roles.' })
  assignNode(@Param('uid') uid: string, @Body() body: unknown) {
    return this.api.handle('node.assign', withBody(body, { uid }));
  }

  @Delete('nodes/:uid')
  @ApiTags('nodes')
  @ApiOperation({ summary: 'Remove a node.' })
  removeNode(@Param('uid') uid: string) {
    return this.api.handle('node.remove', { uid });
  }

  @Get('strategies')
  @ApiTags('strategies')
  @ApiOperation({ summary: 'List deployment strategies.' })
  listStrategies() {
    return this.api.handle('strategy.list', {});
  }

  @Post('strategies')
  @ApiTags('strategies')
  @ApiOperation({ summary: 'Upload a deployment strategy.' })
  uploadStrategy(@Body() body: unknown) {
    return this.api.handle('strategy.upload', body);
  }

  @Get('strategies/:name')
  @ApiTags('strategies')
  @ApiOperation({ summary: 'Show a deployment strategy.' })
  getStrategy(@Param('name') name: string) {
    return this.api.handle('strategy.get', { name });
  }

  @Delete('strategies/:name')
  @ApiTags('strategies')
  @ApiOperation({ summary: 'Remove a deployment strategy.' })
  removeStrategy(@Param('name') name: string) {
    return this.api.handle('strategy.remove', { name });
  }
}

/** Liveness for probes; no token needed, says nothing about the data. */
@ApiTags('health')
@Controller()
export class HealthController {
  @Get('health')
  @ApiOperation({ summary: 'Liveness (no token).' })
  health() {
    return { status: 'ok' };
  }
}
