import type { Diagnostic } from '@granule/core';
import { InvalidInputError } from '@granule/core';
import { MASTER_NODE, PlanError, buildPlan, mergeTaskLayers } from '@granule/planner';
import type { PlanFilters } from '@granule/planner';
import type { ClusterSpec, NodeSpec, RoleSelector, TaskDefinition } from '@granule/task-model';
import type { GraphRecords, TaskRecord } from './config-model';
import { parseTaskRecordList } from './task-record';

/** seed 002's GET filters: `start` = that task and everything after it, `end` = it and everything it needs. */
export interface TaskRangeFilter {
  start?: string;
  end?: string;
}

/**
 * The tasks of seed 002's `start` / `end` subgraph as the planner computes it: `buildPlan` with
 * the filters over `nodes`, then every task of `tasks` with at least one instance left, in plan
 * order (first instance). Without filters, `tasks` unchanged. Throws the planner's `PlanError`
 * for an unknown task id or one that runs on none of the nodes.
 */
export function selectTaskRange(
  tasks: TaskDefinition[],
  nodes: NodeSpec[],
  filter: TaskRangeFilter,
  cluster?: ClusterSpec,
): TaskDefinition[] {
  if (!filter.start && !filter.end) return tasks;
  const filters: PlanFilters = {};
  if (filter.start) filters.start = filter.start;
  if (filter.end) filters.end = filter.end;
  let plan;
  try {
    plan = buildPlan(cluster ? { tasks, nodes, filters, cluster } : { tasks, nodes, filters });
  } catch (err) {
    // The planner words filter problems as CLI flags; here they are request fields.
    if (!(err instanceof PlanError)) throw err;
    throw new InvalidInputError(
      err.diagnostics.map((d) => {
        const m = /^--(start|end) (.*?): (.*)$/.exec(d.message);
        return m ? { ...d, path: m[1], message: `${m[3]} ('${m[2]}')` } : d;
      }),
    );
  }
  const wanted = new Map(tasks.map((t) => [t.id, t]));
  const out: TaskDefinition[] = [];
  const seen = new Set<string>();
  for (const i of plan.order) {
    const t = plan.instTask[i];
    if (t < 0) continue;
    const id = plan.tasks[t].id;
    const task = wanted.get(id);
    if (task && !seen.has(id)) {
      seen.add(id);
      out.push(task);
    }
  }
  return out;
}

function selectorNames(selector: RoleSelector | null, names: Set<string>, flags: { master: boolean }): void {
  if (!selector) return;
  if (selector.kind === 'master') flags.master = true;
  if (selector.kind !== 'patterns') return;
  for (const p of selector.patterns) {
    if (p.kind !== 'name') continue;
    if (p.name === MASTER_NODE) flags.master = true;
    else names.add(p.name);
  }
}

/**
 * Nodes to plan a release's tasks on when there is no environment: one node per role name the
 * tasks mention (uid `role-<name>`), plus `master` when a task runs there. Roles given only as
 * `/regex/` get no node of their own.
 */
export function roleNodes(tasks: readonly TaskDefinition[]): NodeSpec[] {
  const names = new Set<string>();
  const flags = { master: false };
  for (const t of tasks) {
    selectorNames(t.roles, names, flags);
    for (const dep of [...t.crossDepends, ...t.crossDependedBy]) {
      if (dep.role.kind !== 'any' && dep.role.kind !== 'self') selectorNames(dep.role, names, flags);
    }
  }
  const nodes: NodeSpec[] = [...names].sort().map((name) => ({ uid: `role-${name}`, roles: [name] }));
  if (flags.master) nodes.push({ uid: MASTER_NODE, roles: [] });
  return nodes;
}

/** One enabled plugin's contribution to an environment: its name and graphs for the environment's release. */
export interface PluginGraphs {
  name: string;
  graphs: GraphRecords;
}

/** What an environment's graph is made of (seed 002's layers). */
export interface EnvironmentGraphInput {
  release: { label: string; graphs: GraphRecords };
  plugins: PluginGraphs[];
  /** Per-environment task overrides (apply to the `default` graph). */
  overrides: TaskRecord[];
  overridesLabel: string;
  type: string;
}

/**
 * Merges an environment's graph of one type: release tasks, then enabled plugins, then the
 * environment's overrides (`default` only); for one id the environment beats a plugin, which
 * beats the release. Throws `InvalidInputError` naming the graph types there are for an
 * unknown type, or every problem found in the stored records.
 */
export function environmentGraph(input: EnvironmentGraphInput): TaskDefinition[] {
  const types = new Set<string>(['default', ...Object.keys(input.release.graphs)]);
  for (const p of input.plugins) for (const t of Object.keys(p.graphs)) types.add(t);
  if (!types.has(input.type)) {
    throw new InvalidInputError([
      {
        severity: 'error',
        code: 'CONFIG_UNKNOWN_GRAPH',
        path: 'type',
        message: `graph '${input.type}' does not exist; the environment has: ${[...types].sort().join(', ')}`,
      },
    ]);
  }
  const diagnostics: Diagnostic[] = [];
  const parse = (records: readonly unknown[], label: string, plugin?: string): TaskDefinition[] => {
    const r = parseTaskRecordList(records, label, plugin);
    diagnostics.push(...r.diagnostics);
    return r.tasks;
  };
  const release = parse(input.release.graphs[input.type] ?? [], `${input.release.label}/${input.type}`);
  const plugins = input.plugins.map((p) => ({
    name: p.name,
    tasks: parse(p.graphs[input.type] ?? [], `plugins/${p.name}/${input.type}`, p.name),
  }));
  const cluster = input.type === 'default' ? parse(input.overrides, input.overridesLabel) : [];
  const merged = mergeTaskLayers({ release, plugins, cluster });
  diagnostics.push(...merged.diagnostics);
  if (diagnostics.some((d) => d.severity === 'error')) throw new InvalidInputError(diagnostics);
  return merged.tasks;
}
