import type { DataSource, EntityManager } from 'typeorm';
import { InvalidInputError } from '@granule/core';
import { environmentGraph, parseTaskRecordList, roleNodes, selectTaskRange, toTaskRecord } from '@granule/config-model';
import type { EnvironmentGraphInput, TaskRecord } from '@granule/config-model';
import type { GetTasksRequest, PutTasksRequest, TasksView } from '@granule/contracts';
import { buildPlan } from '@granule/planner';
import type { ClusterSpec, NodeSpec, TaskDefinition } from '@granule/task-model';
import { EnvironmentEntity, NodeEntity, ReleaseEntity } from '../persistence/config-store.entities';
import { pluginReleaseFor } from './environment.service';
import { SecretSealing } from './secret-sealing';
import { enabledPlugins, findEnvironment, findRelease } from './lookups';

const unknownGraph = (graph: string, types: string[]): InvalidInputError =>
  new InvalidInputError([
    {
      severity: 'error',
      code: 'CONFIG_UNKNOWN_GRAPH',
      path: 'graph',
      message: `graph '${graph}' does not exist; there are: ${types.sort().join(', ')}`,
    },
  ]);

/** What an environment's graph is planned with: its tasks, nodes and cluster data. */
interface EnvironmentContext {
  env: EnvironmentEntity;
  tasks: TaskDefinition[];
  nodes: NodeSpec[];
  cluster: ClusterSpec;
}

/** What an environment's graphs are merged from: its release, enabled plugins (in order) and overrides. */
export async function environmentLayers(
  em: EntityManager,
  env: EnvironmentEntity,
): Promise<Omit<EnvironmentGraphInput, 'type'>> {
  const release = await em.getRepository(ReleaseEntity).findOneByOrFail({ id: env.releaseId });
  const ordered = await enabledPlugins(em, env);
  return {
    release: { label: `releases/${release.id}`, graphs: release.graphs },
    plugins: ordered.map((p) => ({ name: p.name, graphs: pluginReleaseFor(p, release).graphs })),
    overrides: env.taskOverrides,
    overridesLabel: `environments/${env.id}/deployment_tasks`,
  };
}

/**
 * Deployment tasks of releases and environments (seed 002): read with `start` / `end`
 * filters, replace (validated by the task parser and the planner first).
 */
export class TaskService {
  constructor(
    private readonly ds: DataSource,
    private readonly sealing = new SecretSealing(),
  ) {}

  async get(req: GetTasksRequest): Promise<TasksView> {
    const graph = req.graph ?? 'default';
    const filter = { ...(req.start ? { start: req.start } : {}), ...(req.end ? { end: req.end } : {}) };
    let id: number;
    let records: TaskRecord[];
    let plugins: Record<string, string> | undefined;
    if (req.scope === 'release') {
      const release = await findRelease(this.ds.manager, req.id);
      id = release.id;
      const stored = release.graphs[graph];
      if (stored === undefined && graph !== 'default') throw unknownGraph(graph, Object.keys(release.graphs));
      const all = stored ?? [];
      const tasks = this.parseStored(all, `releases/${release.id}/${graph}`);
      const selected = selectTaskRange(tasks, roleNodes(tasks), filter, { status: 'new', settings: {} });
      const byId = new Map(all.map((r) => [String(r.id), r]));
      records = selected.map((t) => byId.get(t.id) ?? toTaskRecord(t));
    } else {
      const ctx = await this.environmentContext(this.ds.manager, req.id, graph);
      id = ctx.env.id;
      const selected = selectTaskRange(ctx.tasks, ctx.nodes, filter, ctx.cluster);
      records = selected.map(toTaskRecord);
      plugins = Object.fromEntries(
        selected.filter((t) => t.source.plugin !== undefined).map((t) => [t.id, t.source.plugin as string]),
      );
    }
    return { scope: req.scope, id, graph, ...filter, tasks: records, ...(plugins ? { plugins } : {}) };
  }

  async put(req: PutTasksRequest): Promise<TasksView> {
    const graph = req.graph ?? 'default';
    return this.ds.transaction(async (em) => {
      if (req.scope === 'release') {
        const release = await findRelease(em, req.id);
        const tasks = this.parseUpload(req.tasks, `releases/${release.id}/${graph}`);
        // The planner checks references and cycles, as it would at deployment time.
        buildPlan({ tasks, nodes: roleNodes(tasks), cluster: { status: 'new', settings: {} } });
        const records = this.sealing.tasks(req.tasks as TaskRecord[], { file: `releases/${release.id}/${graph}` });
        release.graphs = { ...release.graphs, [graph]: records };
        await em.getRepository(ReleaseEntity).save(release);
        return { scope: 'release', id: release.id, graph, tasks: records };
      }
      if (graph !== 'default') {
        throw new InvalidInputError([
          {
            severity: 'error',
            code: 'CONFIG_BAD_FIELD',
            path: 'graph',
            message: `an environment's task overrides belong to the default graph, got '${graph}'`,
          },
        ]);
      }
      const env = await findEnvironment(em, req.id);
      this.parseUpload(req.tasks, `environments/${env.id}/deployment_tasks`);
      env.taskOverrides = this.sealing.tasks(req.tasks as TaskRecord[], {
        file: `environments/${env.id}/deployment_tasks`,
      });
      const ctx = await this.environmentContext(em, String(env.id), 'default', env);
      buildPlan({ tasks: ctx.tasks, nodes: ctx.nodes, cluster: ctx.cluster });
      await em.getRepository(EnvironmentEntity).save(env);
      return { scope: 'environment', id: env.id, graph, tasks: env.taskOverrides };
    });
  }

  private parseUpload(records: unknown[], label: string): TaskDefinition[] {
    const parsed = parseTaskRecordList(records, label);
    if (parsed.diagnostics.some((d) => d.severity === 'error')) throw new InvalidInputError(parsed.diagnostics);
    return parsed.tasks;
  }

  private parseStored(records: TaskRecord[], label: string): TaskDefinition[] {
    return this.parseUpload(records, label);
  }

  /** The merged graph of an environment (release, enabled plugins, overrides) and its nodes. */
  private async environmentContext(
    em: EntityManager,
    ref: string,
    graph: string,
    pending?: EnvironmentEntity,
  ): Promise<EnvironmentContext> {
    const env = pending ?? (await findEnvironment(em, ref));
    const tasks = environmentGraph({ ...(await environmentLayers(em, env)), type: graph });
    const rows = await em.getRepository(NodeEntity).find({ where: { environmentId: env.id }, order: { uid: 'ASC' } });
    const envNodes: NodeSpec[] = rows.map((n) => ({
      uid: n.uid,
      name: n.hostname,
      roles: [...new Set([...n.roles, ...n.pendingRoles])],
      tags: n.tags,
      labels: n.labels,
      ...(n.rack ? { rack: n.rack } : {}),
    }));
    // An environment without nodes yet is planned on one node per role, like a release.
    const nodes = envNodes.length > 0 ? envNodes : roleNodes(tasks);
    return { env, tasks, nodes, cluster: { status: env.status, settings: env.settings, nodes } };
  }
}
