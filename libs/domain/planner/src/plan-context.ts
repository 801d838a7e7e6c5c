import type { Diagnostic } from '@granule/core';
import { matchesNode, selectsMaster } from '@granule/task-model';
import type { NodeSpec, RoleSelector, TaskDefinition } from '@granule/task-model';
import { InstanceGraph } from './instance-graph';
import type { PlanFilters, PlanRequest } from './plan-types';
import { MASTER_NODE, SYNC_NODE } from './plan-types';
import { PlanError, taskDiagnostic } from './planner-errors';
import { STAGE_BOUNDS, STANDARD_STAGE_IDS, withStandardStages } from './standard-stages';

/** What a task is to the planner: work on a node, a stage sync point, or a group. */
export const EXEC = 0;
export const STAGE = 1;
export const GROUP = 2;

/** The merged tasks and nodes, checked and indexed: what every planning step reads. */
export interface PlanInput {
  tasks: TaskDefinition[];
  index: Map<string, number>;
  /** Per task: EXEC, STAGE or GROUP. */
  taskKind: number[];
  /** Per task: its template predecessors (requires plus the reverse of required_for). */
  tpreds: number[][];
  /**
   * Per task: 1 when it lies between `pre_deployment_start` and `pre_deployment_end`, or between
   * `post_deployment_start` and `post_deployment_end`, in the task graph. Such a task belongs to
   * that stage and never to a group (Fuel's legacy_tasks_adapter.py binds it the same way).
   */
  stageBound: Uint8Array;
  filters: PlanFilters;
  /** The deployment's nodes (after `--node`). */
  nodes: NodeSpec[];
  /** `nodes`, plus the master host when a task runs there; node indices refer to this list. */
  allNodes: NodeSpec[];
  /** Node uids by index, `sync` last. */
  nodeNames: string[];
  /** Index of the `sync` node. */
  sync: number;
}

/** The group tasks, their nodes and their order. Groups are numbered `gi` in task order. */
export interface GroupLayout {
  /** Task index of each group. */
  task: number[];
  /** Node indices each group's roles select, in NODES.yaml order. */
  nodes: number[][];
  /** Task index → its group depth (groups come after every group they require). */
  rank: Map<number, number>;
  /** Task index → the groups that list it in `tasks`. */
  listedIn: Map<number, number[]>;
  /** Task index of a group → its `gi`. */
  indexOf: Map<number, number>;
}

/** What a same-node predecessor of a task resolves to on one kind of node. */
export type LocalRef =
  { kind: 'local'; task: number } | { kind: 'stage'; task: number } | { kind: 'group'; task: number };

/** Everything that is the same for all nodes with the same roles and tags. */
export interface Signature {
  present: Uint8Array;
  /** Per task: the `gi` of the group it belongs to on such a node, or -1. */
  member: Int32Array;
  localPreds: LocalRef[][];
  /** Per group: its member tasks on such a node with no member predecessor / successor. */
  memberSources: Map<number, number[]>;
  memberSinks: Map<number, number[]>;
}

/** The instance graph under construction, with the lookups the edge-adding steps share. */
export interface PlanContext extends PlanInput {
  groups: GroupLayout;
  nodeSignature: Signature[];
  graph: InstanceGraph;
  /** Per node, per task: the task's instance there, or -1. */
  nodeTaskInstance: Int32Array[];
  /** Per task: all its instances (a group's start and end come first). */
  instancesOf: number[][];
  /** Per task: its sync point when it is a stage, else -1. */
  stageInstance: Int32Array;
  groupStart: number[];
  groupEnd: number[];
  /** Per group: node index → the "group done here" marker. */
  groupMarker: Map<number, number>[];
}

function validateReferences(tasks: TaskDefinition[], index: Map<string, number>, diags: Diagnostic[]): void {
  for (const t of tasks) {
    for (const [field, ids] of [
      ['requires', t.requires],
      ['required_for', t.requiredFor],
      ['tasks', t.tasks ?? []],
    ] as const) {
      for (const id of ids) {
        if (!index.has(id))
          diags.push(taskDiagnostic(t, 'PLAN_UNKNOWN_TASK', `${field} names task '${id}', which does not exist`));
      }
    }
    for (const [field, deps] of [
      ['cross-depends', t.crossDepends],
      ['cross-depended-by', t.crossDependedBy],
    ] as const) {
      for (const dep of deps) {
        if (!dep.isRegex && !index.has(dep.name))
          diags.push(taskDiagnostic(t, 'PLAN_UNKNOWN_TASK', `${field} names task '${dep.name}', which does not exist`));
      }
    }
  }
}

function validateFilters(filters: PlanFilters, index: Map<string, number>, nodes: NodeSpec[], diags: Diagnostic[]) {
  for (const [flag, ids] of [
    ['--start', filters.start ? [filters.start] : []],
    ['--end', filters.end ? [filters.end] : []],
    ['--skip', filters.skip ?? []],
    ['--only', filters.only ?? []],
  ] as const) {
    for (const id of ids) {
      if (!index.has(id))
        diags.push({
          severity: 'error',
          code: 'PLAN_UNKNOWN_FILTER_TASK',
          message: `${flag} ${id}: no task has this id`,
        });
    }
  }
  if (!filters.nodes) return;
  const known = new Set(nodes.map((n) => n.uid));
  for (const uid of filters.nodes) {
    if (!known.has(uid))
      diags.push({ severity: 'error', code: 'PLAN_UNKNOWN_NODE', message: `--node ${uid}: no node has this uid` });
  }
}

/**
 * Adds the standard stages, indexes the tasks, checks every reference and filter (all problems
 * at once, as one `PlanError`), and lays out the nodes.
 */
export function readPlanInput(request: PlanRequest): PlanInput {
  const diags: Diagnostic[] = [];
  const tasks = withStandardStages(request.tasks);
  const index = new Map<string, number>();
  tasks.forEach((t, i) => index.set(t.id, i));
  validateReferences(tasks, index, diags);
  const filters = request.filters ?? {};
  validateFilters(filters, index, request.nodes, diags);
  if (diags.length > 0) throw new PlanError(diags);

  const wanted = filters.nodes ? new Set(filters.nodes) : undefined;
  const nodes = wanted ? request.nodes.filter((n) => wanted.has(n.uid)) : request.nodes;
  const taskKind = tasks.map((t) => (t.type === 'stage' ? STAGE : t.type === 'group' ? GROUP : EXEC));
  const needsMaster = tasks.some((t) => selectsMaster(t.roles)) && !nodes.some((n) => n.uid === MASTER_NODE);
  const allNodes: NodeSpec[] = needsMaster ? [...nodes, { uid: MASTER_NODE, roles: [] }] : nodes;
  const tpreds: number[][] = tasks.map((t) => t.requires.map((id) => index.get(id) as number));
  tasks.forEach((t, i) => {
    for (const id of t.requiredFor) tpreds[index.get(id) as number].push(i);
  });
  return {
    tasks,
    index,
    taskKind,
    tpreds,
    stageBound: bindToStages(tasks, index, tpreds),
    filters,
    nodes,
    allNodes,
    nodeNames: [...allNodes.map((n) => n.uid), SYNC_NODE],
    sync: allNodes.length,
  };
}

/**
 * Marks the tasks between each pre/post stage's start and end: reachable from the start and
 * reaching the end, along requires / required_for and the standard stage chain.
 */
function bindToStages(tasks: TaskDefinition[], index: Map<string, number>, tpreds: number[][]): Uint8Array {
  const preds = tpreds.map((list) => [...list]);
  for (let k = 1; k < STANDARD_STAGE_IDS.length; k++)
    preds[index.get(STANDARD_STAGE_IDS[k]) as number].push(index.get(STANDARD_STAGE_IDS[k - 1]) as number);
  const succs: number[][] = tasks.map(() => []);
  preds.forEach((list, v) => {
    for (const u of list) succs[u].push(v);
  });
  const reach = (from: number, next: number[][]): Uint8Array => {
    const seen = new Uint8Array(tasks.length);
    const stack = [from];
    seen[from] = 1;
    while (stack.length > 0) {
      for (const w of next[stack.pop() as number]) {
        if (seen[w]) continue;
        seen[w] = 1;
        stack.push(w);
      }
    }
    return seen;
  };
  const bound = new Uint8Array(tasks.length);
  for (const stage of ['pre_deployment', 'post_deployment'] as const) {
    const after = reach(index.get(STAGE_BOUNDS[stage].start) as number, succs);
    const before = reach(index.get(STAGE_BOUNDS[stage].end) as number, preds);
    for (let t = 0; t < tasks.length; t++) if (after[t] && before[t]) bound[t] = 1;
  }
  return bound;
}

/** Orders groups so that a group comes after every group it (transitively) requires. */
function rankGroups(groupTasks: number[], tpreds: number[][], taskKind: number[]): Map<number, number> {
  const rank = new Map<number, number>();
  const visiting = new Set<number>();
  const depth = (g: number): number => {
    const known = rank.get(g);
    if (known !== undefined) return known;
    if (visiting.has(g)) return 0; // a cycle; the instance graph reports it
    visiting.add(g);
    let d = 0;
    const seen = new Set<number>();
    const stack = [...tpreds[g]];
    while (stack.length > 0) {
      const u = stack.pop() as number;
      if (seen.has(u)) continue;
      seen.add(u);
      if (taskKind[u] === GROUP) d = Math.max(d, depth(u) + 1);
      else stack.push(...tpreds[u]);
    }
    visiting.delete(g);
    rank.set(g, d);
    return d;
  };
  for (const g of groupTasks) depth(g);
  return rank;
}

/** The groups, the nodes their roles select, their order, and which tasks they list. */
export function layoutGroups({ tasks, taskKind, tpreds, index, allNodes }: PlanInput): GroupLayout {
  const task = tasks.map((_, i) => i).filter((i) => taskKind[i] === GROUP);
  const nodes = task.map((g) =>
    allNodes
      .map((_, n) => n)
      .filter((n) => tasks[g].roles !== null && matchesNode(tasks[g].roles as RoleSelector, allNodes[n])),
  );
  const listedIn = new Map<number, number[]>();
  task.forEach((g, gi) => {
    for (const id of tasks[g].tasks ?? []) {
      const t = index.get(id) as number;
      listedIn.set(t, [...(listedIn.get(t) ?? []), gi]);
    }
  });
  return {
    task,
    nodes,
    rank: rankGroups(task, tpreds, taskKind),
    listedIn,
    indexOf: new Map(task.map((g, gi) => [g, gi])),
  };
}

/**
 * Adds every instance to a new graph: sync points first (so they sort before real work at
 * equal priority), then each node's tasks, then the per-node group markers.
 */
export function createInstances(input: PlanInput, groups: GroupLayout, nodeSignature: Signature[]): PlanContext {
  const { tasks, taskKind, allNodes, sync } = input;
  const graph = new InstanceGraph();
  const nodeTaskInstance: Int32Array[] = allNodes.map(() => new Int32Array(tasks.length).fill(-1));
  const instancesOf: number[][] = tasks.map(() => []);
  const stageInstance = new Int32Array(tasks.length).fill(-1);
  tasks.forEach((_, i) => {
    if (taskKind[i] === STAGE) {
      stageInstance[i] = graph.add(i, sync, 'stage');
      instancesOf[i].push(stageInstance[i]);
    }
  });
  const groupStart = groups.task.map((g) => graph.addSynthetic(`${tasks[g].id}:start`, sync, 'group-start', g));
  const groupEnd = groups.task.map((g) => graph.addSynthetic(`${tasks[g].id}:end`, sync, 'group-end', g));
  groups.task.forEach((g, gi) => instancesOf[g].push(groupStart[gi], groupEnd[gi]));

  allNodes.forEach((_, n) => {
    const sig = nodeSignature[n];
    for (let t = 0; t < tasks.length; t++) {
      if (sig.present[t]) {
        const id = graph.add(t, n, 'task');
        nodeTaskInstance[n][t] = id;
        instancesOf[t].push(id);
      }
    }
  });
  const groupMarker = groups.task.map(() => new Map<number, number>());
  groups.task.forEach((g, gi) => {
    for (const n of groups.nodes[gi]) {
      const id = graph.add(g, n, 'group');
      groupMarker[gi].set(n, id);
      instancesOf[g].push(id);
    }
  });
  return {
    ...input,
    groups,
    nodeSignature,
    graph,
    nodeTaskInstance,
    instancesOf,
    stageInstance,
    groupStart,
    groupEnd,
    groupMarker,
  };
}
