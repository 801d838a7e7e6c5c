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
@Controller()
@UseGuards(ApiTokenGuard)
export class ConfigStoreController {
  constructor(@Inject(ConfigStoreApi) private readonly api: ConfigStoreApi) {}

  @Get('releases')
  listReleases() {
    return this.api.handle('release.list', {});
  }

  @Post('releases')
  installRelease(@Body() body: unknown) {
    return this.api.handle('release.install', body);
  }

  /**
   * Stores deployment files (the deterministic tar of `deployment_scripts/`) under their
   * SHA-256, streamed from the request body; `Content-Length` is required. An install then
   * names them with `artifact_digest` (ADR 0026).
   */
  @Put('artifacts/:digest')
  @HttpCode(201)
  putArtifact(@Param('digest') digest: string, @Req() req: IncomingMessage) {
    return this.api.storeArtifact(digest, req.headers['content-length'], req);
  }

  @Get('releases/:id')
  getRelease(@Param('id') id: string) {
    return this.api.handle('release.get', { id });
  }

  @Delete('releases/:id')
  removeRelease(@Param('id') id: string) {
    return this.api.handle('release.remove', { id });
  }

  @Get('releases/:id/deployment_tasks')
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
  listPlugins() {
    return this.api.handle('plugin.list', {});
  }

  @Post('plugins')
  installPlugin(@Body() body: unknown) {
    return this.api.handle('plugin.install', body);
  }

  @Get('plugins/:id')
  getPlugin(@Param('id') id: string) {
    return this.api.handle('plugin.get', { id });
  }

  @Delete('plugins/:id')
  removePlugin(@Param('id') id: string) {
    return this.api.handle('plugin.remove', { id });
  }

  @Get('clusters')
  listClusters() {
    return this.api.handle('env.list', {});
  }

  @Post('clusters')
  createCluster(@Body() body: unknown) {
    return this.api.handle('env.create', body);
  }

  @Get('clusters/:id')
  getCluster(@Param('id') id: string) {
    return this.api.handle('env.get', { id });
  }

  @Patch('clusters/:id')
  updateCluster(@Param('id') id: string, @Body() body: unknown) {
    return this.api.handle('env.update', withBody(body, { id }));
  }

  @Post('clusters/:id/plugins')
  @HttpCode(200)
  enablePlugin(@Param('id') environment: string, @Body() body: unknown) {
    return this.api.handle('env.plugin.enable', withBody(body, { environment }));
  }

  @Delete('clusters/:id/plugins/:plugin')
  disablePlugin(@Param('id') environment: string, @Param('plugin') plugin: string) {
    return this.api.handle('env.plugin.disable', { environment, plugin });
  }

  @Get('clusters/:id/deployment_tasks')
  async getClusterTasks(@Param('id') id: string, @Query() query: QueryParams) {
    return (await this.api.handle('tasks.get', { scope: 'environment', id, ...rangeQuery(query) })).tasks;
  }

  @Put('clusters/:id/deployment_tasks')
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
  getClusterGraph(@Param('id') id: string, @Param('type') graph: string, @Query() query: QueryParams) {
    return this.api.handle('tasks.get', { scope: 'environment', id, graph, ...rangeQuery(query) });
  }

  @Get('nodes')
  listNodes(@Query() query: QueryParams) {
    checkQuery(query, ['cluster']);
    return this.api.handle('node.list', query.cluster === undefined ? {} : { environment: query.cluster });
  }

  @Post('nodes')
  addNode(@Body() body: unknown) {
    return this.api.handle('node.add', body);
  }

  @Get('nodes/:uid')
  getNode(@Param('uid') uid: string) {
    return this.api.handle('node.get', { uid });
  }

  @Patch('nodes/:uid')
  updateNode(@Param('uid') uid: string, @Body() body: unknown) {
    return this.api.handle('node.update', withBody(body, { uid }));
  }

  @Put('nodes/:uid/assignment')
  assignNode(@Param('uid') uid: string, @Body() body: unknown) {
    return this.api.handle('node.assign', withBody(body, { uid }));
  }

  @Delete('nodes/:uid')
  removeNode(@Param('uid') uid: string) {
    return this.api.handle('node.remove', { uid });
  }

  @Get('strategies')
  listStrategies() {
    return this.api.handle('strategy.list', {});
  }

  @Post('strategies')
  uploadStrategy(@Body() body: unknown) {
    return this.api.handle('strategy.upload', body);
  }

  @Get('strategies/:name')
  getStrategy(@Param('name') name: string) {
    return this.api.handle('strategy.get', { name });
  }

  @Delete('strategies/:name')
  removeStrategy(@Param('name') name: string) {
    return this.api.handle('strategy.remove', { name });
  }
}

/** Liveness for probes; no token needed, says nothing about the data. */
@Controller()
export class HealthController {
  @Get('health')
  health() {
    return { status: 'ok' };
  }
}
