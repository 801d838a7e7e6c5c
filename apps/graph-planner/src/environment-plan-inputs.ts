import { InvalidInputError, identifierProblem } from '@granule/core';
import type { Diagnostic } from '@granule/core';
import type { ConfigStoreClient } from '@granule/config-store-client';
import type { NodeView } from '@granule/contracts';
import type { PlanFilters, PlanRequest } from '@granule/planner';
import { parseTaskData, planSizeProblems } from '@granule/task-model';
import type { NodeSpec, TaskDefinition } from '@granule/task-model';

/** Where an environment's plan inputs come from (the config-store, over NATS). */
export interface EnvironmentInputsSource {
  /** The planner's request for graph `graph` of environment `envId`; throws `GranuleError`s with operator messages. */
  planRequest(envId: string, graph: string, filters: PlanFilters): Promise<PlanRequest>;
}

/** A config-store node as the planner sees it: roles include the pending ones (they are being deployed). */
export function nodeSpecOf(node: NodeView): NodeSpec {
  return {
    uid: node.uid,
    name: node.hostname,
    roles: [...new Set([...node.roles, ...node.pending_roles])],
    tags: node.tags,
    labels: node.labels,
    ...(node.rack ? { rack: node.rack } : {}),
  };
}

/**
 * Gives each task of an environment's merged graph the plugin it came from (config-store's
 * `plugins` map: task id → plugin name), so tasks of equal stage priority are ordered by plugin
 * name as they are when planning from files (seed 000).
 */
export function withPluginSources(
  tasks: readonly TaskDefinition[],
  plugins: Readonly<Record<string, string>> = {},
): TaskDefinition[] {
  return tasks.map((t) =>
    Object.hasOwn(plugins, t.id)
      ? { ...t, source: { ...t.source, layer: 'plugin' as const, plugin: plugins[t.id] } }
      : t,
  );
}

/**
 * Reads an environment from the config-store: its merged graph (`tasks.get` with scope
 * `environment`: release, enabled plugins and the environment's overrides, merged by the
 * config-store with `mergeTaskLayers`), its nodes with roles, status and settings.
 */
export class ConfigStoreInputs implements EnvironmentInputsSource {
  constructor(private readonly client: ConfigStoreClient) {}

  async planRequest(envId: string, graph: string, filters: PlanFilters): Promise<PlanRequest> {
    const env = await this.client.request('env.get', { id: envId });
    const [view, nodeViews] = await Promise.all([
      this.client.request('tasks.get', { scope: 'environment', id: String(env.id), graph }),
      this.client.request('node.list', { environment: String(env.id) }),
    ]);
    const label = `environments/${env.id}/${graph}`;
    const parsed = parseTaskData(view.tasks, label, { format: 'deployment-tasks' });
    const diagnostics: Diagnostic[] = parsed.diagnostics.filter((d) => d.severity === 'error');
    if (nodeViews.length === 0) {
      diagnostics.push({
        severity: 'error',
        code: 'PLAN_NO_NODES',
        message: `environment '${env.name}' has no nodes: assign nodes to it before planning a deployment`,
      });
    }
    // Nodes stored before the uid rule existed (e.g. 'web.1') cannot be dispatched to.
    for (const n of nodeViews) {
      const problem = identifierProblem('nodeUid', n.uid);
      if (problem)
        diagnostics.push({
          severity: 'error',
          code: 'INVALID_IDENTIFIER',
          path: `nodes.${n.uid}`,
          message: `${problem}: remove the node and add it again with a valid uid`,
        });
    }
    if (diagnostics.length === 0) diagnostics.push(...planSizeProblems(parsed.tasks, nodeViews.map(nodeSpecOf)));
    if (diagnostics.length > 0) throw new InvalidInputError(diagnostics);
    const nodes = nodeViews.map(nodeSpecOf);
    return {
      tasks: withPluginSources(parsed.tasks, view.plugins),
      nodes,
      cluster: { status: env.status, settings: env.settings, nodes },
      filters,
    };
  }
}
