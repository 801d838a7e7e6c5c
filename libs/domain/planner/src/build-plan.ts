import type { Diagnostic } from '@granule/core';
import { matchesNode, resolveFaultTolerance } from '@granule/task-model';
import type { NodeSpec, RoleSelector, StageName, TaskDefinition } from '@granule/task-model';
import { applyConditions } from './apply-conditions';
import { InstanceGraph, buildSuccessors, findCycle, sortByLevel, topologicalLevels } from './instance-graph';
import type { Plan, PlanGroup, PlanRequest, SkipReason } from './plan-types';
import { MASTER_NODE, SYNC_NODE } from './plan-types';
import { PlanCycleError, PlanError, taskDiagnostic } from './planner-errors';
import { STAGE_BOUNDS, STAGE_ORDER, STANDARD_STAGE_IDS, withStandardStages } from './standard-stages';
import { selectSubgraph } from './subgraph';

const EXEC = 0;
const STAGE = 1;
const GROUP = 2;

/** What a same-node predecessor of a task resolves to on one kind of node. */
type LocalRef = { kind: 'local'; task: number } | { kind: 'stage'; task: number } | { kind: 'group'; task: number };

/** Everything that is the same for all nodes with the same roles and tags. */
interface Signature {
  present: Uint8Array;
  /** Per task: index into `groupIds` of the group it belongs to on such a node, or -1. */
  member: Int32Array;
  localPreds: LocalRef[][];
  /** Per group index: its member tasks on such a node with no member predecessor / successor. */
  memberSources: Map<number, number[]>;
  memberSinks: Map<number, number[]>;
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

function signatureKey(node: NodeSpec): string {
  return `${[...node.roles].sort().join(',')}|${[...(node.tags ?? [])].sort().join(',')}|${node.uid === MASTER_NODE ? 'm' : ''}`;
}

/** True when some single role or tag of `node` is selected by both selectors. */
function sharesRole(a: RoleSelector, b: RoleSelector, node: NodeSpec): boolean {
  for (const role of node.roles) {
    const one: NodeSpec = { uid: node.uid, roles: [role] };
    if (matchesNode(a, one) && matchesNode(b, one)) return true;
  }
  for (const tag of node.tags ?? []) {
    const one: NodeSpec = { uid: node.uid, roles: [], tags: [tag] };
    if (matchesNode(a, one) && matchesNode(b, one)) return true;
  }
  return a.kind === 'master' && b.kind === 'master' && node.uid === MASTER_NODE;
}

/**
 * Builds the deployment plan: one instance per task per node, with same-node edges from
 * requires / required_for (through tasks absent on a node), group and stage sync points,
 * stage-postfix ordering, group strategies, cross-node edges, conditions and filters.
 * Throws `PlanError` (bad references, filters, conditions) or `PlanCycleError`.
 */
export function buildPlan(request: PlanRequest): Plan {
  const diags: Diagnostic[] = [];
  const tasks = withStandardStages(request.tasks);
  const index = new Map<string, number>();
  tasks.forEach((t, i) => index.set(t.id, i));
  validateReferences(tasks, index, diags);

  const filters = request.filters ?? {};
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
  let nodes = request.nodes;
  if (filters.nodes) {
    const known = new Set(nodes.map((n) => n.uid));
    for (const uid of filters.nodes) {
      if (!known.has(uid))
        diags.push({ severity: 'error', code: 'PLAN_UNKNOWN_NODE', message: `--node ${uid}: no node has this uid` });
    }
    const wanted = new Set(filters.nodes);
    nodes = nodes.filter((n) => wanted.has(n.uid));
  }
  if (diags.length > 0) throw new PlanError(diags);

  const taskKind = tasks.map((t) => (t.type === 'stage' ? STAGE : t.type === 'group' ? GROUP : EXEC));
  const needsMaster = tasks.some((t) => t.roles?.kind === 'master') && !nodes.some((n) => n.uid === MASTER_NODE);
  const allNodes: NodeSpec[] = needsMaster ? [...nodes, { uid: MASTER_NODE, roles: [] }] : nodes;
  const nodeNames = [...allNodes.map((n) => n.uid), SYNC_NODE];
  const sync = allNodes.length;

  // Template predecessors: requires plus the reverse of required_for.
  const tpreds: number[][] = tasks.map((t) => t.requires.map((id) => index.get(id) as number));
  tasks.forEach((t, i) => {
    for (const id of t.requiredFor) tpreds[index.get(id) as number].push(i);
  });

  // Groups, their nodes, and their order (groups before the groups that require them).
  const groupTasks = tasks.map((_, i) => i).filter((i) => taskKind[i] === GROUP);
  const groupNodes = groupTasks.map((g) =>
    allNodes
      .map((_, n) => n)
      .filter((n) => tasks[g].roles !== null && matchesNode(tasks[g].roles as RoleSelector, allNodes[n])),
  );
  const groupRank = rankGroups(groupTasks, tpreds, taskKind);
  const listedIn = new Map<number, number[]>(); // task -> groups listing it in `tasks`
  groupTasks.forEach((g, gi) => {
    for (const id of tasks[g].tasks ?? []) {
      const t = index.get(id) as number;
      listedIn.set(t, [...(listedIn.get(t) ?? []), gi]);
    }
  });

  // Per signature: which tasks run on such a node, their group, and their same-node predecessors.
  const signatures = new Map<string, Signature>();
  const nodeSignature: Signature[] = allNodes.map((node) => {
    const key = signatureKey(node);
    let sig = signatures.get(key);
    if (!sig) {
      sig = computeSignature(node, tasks, taskKind, tpreds, groupTasks, groupRank, listedIn);
      signatures.set(key, sig);
    }
    return sig;
  });

  const graph = new InstanceGraph();
  const nodeTaskInstance: Int32Array[] = allNodes.map(() => new Int32Array(tasks.length).fill(-1));
  const instancesOf: number[][] = tasks.map(() => []);

  // Sync points first, so they sort before real work at equal priority.
  const stageInstance = new Int32Array(tasks.length).fill(-1);
  tasks.forEach((t, i) => {
    if (taskKind[i] === STAGE) {
      stageInstance[i] = graph.add(i, sync, 'stage');
      instancesOf[i].push(stageInstance[i]);
    }
  });
  const groupStart = groupTasks.map((g) => graph.addSynthetic(`${tasks[g].id}:start`, sync, 'group-start', g));
  const groupEnd = groupTasks.map((g) => graph.addSynthetic(`${tasks[g].id}:end`, sync, 'group-end', g));
  groupTasks.forEach((g, gi) => instancesOf[g].push(groupStart[gi], groupEnd[gi]));

  // Task instances and per-node group markers.
  const groupMarker = groupTasks.map(() => new Map<number, number>());
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
  groupTasks.forEach((g, gi) => {
    for (const n of groupNodes[gi]) {
      const id = graph.add(g, n, 'group');
      groupMarker[gi].set(n, id);
      instancesOf[g].push(id);
    }
  });

  // Global resolution of a template predecessor (for sync points): stage → its instance,
  // group → its end, task → all its instances, or what it needs when it has none.
  const globalMemo = new Map<number, number[]>();
  const groupIndexOf = new Map(groupTasks.map((g, gi) => [g, gi]));
  const resolveGlobal = (u: number, visiting: Set<number>): number[] => {
    if (taskKind[u] === STAGE) return [stageInstance[u]];
    if (taskKind[u] === GROUP) return [groupEnd[groupIndexOf.get(u) as number]];
    const own = instancesOf[u];
    if (own.length > 0) return own;
    const memo = globalMemo.get(u);
    if (memo) return memo;
    if (visiting.has(u)) return [];
    visiting.add(u);
    const out = tpreds[u].flatMap((w) => resolveGlobal(w, visiting));
    visiting.delete(u);
    globalMemo.set(u, out);
    return out;
  };

  // Standard stage chain and sync-point predecessors.
  for (let k = 1; k < STANDARD_STAGE_IDS.length; k++) {
    graph.preds[stageInstance[index.get(STANDARD_STAGE_IDS[k]) as number]].push(
      stageInstance[index.get(STANDARD_STAGE_IDS[k - 1]) as number],
    );
  }
  tasks.forEach((_, i) => {
    if (taskKind[i] === STAGE)
      for (const u of tpreds[i]) pushAll(graph.preds[stageInstance[i]], resolveGlobal(u, new Set()));
  });
  groupTasks.forEach((g, gi) => {
    for (const u of tpreds[g]) pushAll(graph.preds[groupStart[gi]], resolveGlobal(u, new Set()));
    const markers = [...groupMarker[gi].values()];
    pushAll(graph.preds[groupEnd[gi]], markers.length > 0 ? markers : [groupStart[gi]]);
  });

  // Same-node edges of task instances.
  allNodes.forEach((_, n) => {
    const sig = nodeSignature[n];
    const local = nodeTaskInstance[n];
    for (let t = 0; t < tasks.length; t++) {
      const id = local[t];
      if (id < 0) continue;
      for (const ref of sig.localPreds[t]) {
        if (ref.kind === 'local') graph.preds[id].push(local[ref.task]);
        else if (ref.kind === 'stage') graph.preds[id].push(stageInstance[ref.task]);
        else graph.preds[id].push(groupEnd[groupIndexOf.get(ref.task) as number]);
      }
    }
  });

  // Groups: batches by strategy; members' first tasks wait for the batch gate, the node's
  // group marker waits for members' last tasks.
  groupTasks.forEach((g, gi) => {
    const strategy = tasks[g].strategy;
    const size = strategy?.type === 'one_by_one' ? 1 : (strategy?.amount ?? Number.MAX_SAFE_INTEGER);
    const members = groupNodes[gi];
    let gate = [groupStart[gi]];
    for (let b = 0; b * size < members.length; b++) {
      const batch = members.slice(b * size, (b + 1) * size);
      const sources: number[] = [];
      for (const n of batch) {
        const sig = nodeSignature[n];
        const marker = groupMarker[gi].get(n) as number;
        const firsts = sig.memberSources.get(gi);
        if (!firsts) {
          sources.push(marker);
          continue;
        }
        for (const t of firsts) sources.push(nodeTaskInstance[n][t]);
        for (const t of sig.memberSinks.get(gi) as number[]) graph.preds[marker].push(nodeTaskInstance[n][t]);
      }
      graph.connect(sources, gate, 'all', `${tasks[g].id}:batch-${b + 1}`, sync);
      gate = batch.map((n) => groupMarker[gi].get(n) as number);
    }
  });

  // Tasks with a `stage:` run in postfix order (seed 000), each after the previous one on every node.
  const fileRank = new Map<string, number>();
  for (const t of tasks) if (!fileRank.has(t.source.file)) fileRank.set(t.source.file, fileRank.size);
  for (const stageName of STAGE_ORDER) {
    const steps = tasks
      .map((t, i) => ({ t, i }))
      .filter(({ t, i }) => t.stage?.name === stageName && taskKind[i] === EXEC && instancesOf[i].length > 0)
      .sort(
        (a, b) =>
          (a.t.stage?.priority ?? 0) - (b.t.stage?.priority ?? 0) ||
          (a.t.source.plugin ?? '').localeCompare(b.t.source.plugin ?? '') ||
          (fileRank.get(a.t.source.file) ?? 0) - (fileRank.get(b.t.source.file) ?? 0) ||
          a.t.source.index - b.t.source.index,
      );
    const bounds = STAGE_BOUNDS[stageName];
    let previous = [stageInstance[index.get(bounds.start) as number]];
    for (const [k, { t, i }] of steps.entries()) {
      graph.connect(instancesOf[i], previous, 'all', `${stageName}:step-${k + 1}:${t.id}`, sync);
      previous = instancesOf[i];
    }
    graph.connect([stageInstance[index.get(bounds.end) as number]], previous, 'all', `${stageName}:end`, sync);
  }

  addCrossDependencies(
    graph,
    tasks,
    taskKind,
    allNodes,
    nodeTaskInstance,
    instancesOf,
    stageInstance,
    groupTasks,
    groupMarker,
    sync,
  );
  graph.dedupe();

  // Order, and a cycle check on the whole graph before any filter hides part of it.
  const succ = buildSuccessors(graph.preds, graph.anyPreds);
  const topo = topologicalLevels(graph.preds, graph.anyPreds, succ);
  if (topo.count < graph.size) {
    const cycle = findCycle(graph.preds, graph.anyPreds, topo.order, topo.count);
    const name = (i: number): string =>
      `${graph.syntheticNames.get(i) ?? tasks[graph.task[i]].id}@${nodeNames[graph.node[i]]}`;
    throw new PlanCycleError(cycle.map(name));
  }

  const stage = deriveStages(graph, tasks, index, topo.order);
  const skipped: (SkipReason | undefined)[] = new Array(graph.size).fill(undefined);
  graph.task.forEach((t, i) => {
    if (t >= 0 && graph.kind[i] === 'task' && tasks[t].type === 'skipped') skipped[i] = 'type';
  });
  applyConditions(graph, tasks, allNodes, nodes, request.cluster, skipped, diags);
  if (diags.length > 0) throw new PlanError(diags);
  applySkipFilters(graph, tasks, filters.skip, filters.only, skipped);

  const groups: PlanGroup[] = groupTasks.map((g, gi) => ({
    id: tasks[g].id,
    nodes: groupNodes[gi].map((n) => nodeNames[n]),
    faultTolerance: resolveFaultTolerance(tasks[g].faultTolerance, groupNodes[gi].length),
    ...(tasks[g].strategy ? { strategy: tasks[g].strategy } : {}),
  }));
  const concurrency: Record<string, number> = {};
  tasks.forEach((t, i) => {
    if (taskKind[i] !== EXEC || !t.strategy) return;
    if (t.strategy.type === 'one_by_one') concurrency[t.id] = 1;
    else if (t.strategy.amount) concurrency[t.id] = t.strategy.amount;
  });

  return selectSubgraph(
    {
      nodeNames,
      tasks,
      instTask: Int32Array.from(graph.task),
      instNode: Int32Array.from(graph.node),
      instKind: graph.kind,
      syntheticNames: graph.syntheticNames,
      preds: graph.preds,
      anyPreds: graph.anyPreds,
      skipped,
      stage,
      priority: topo.level,
      order: sortByLevel(topo.level),
      groups,
      concurrency,
    },
    succ,
    filters,
  );
}

/** Appends without spreading (a spread of 100k+ arguments overflows the stack). */
function pushAll(target: number[], items: readonly number[]): void {
  for (const item of items) target.push(item);
}

/** Drops missing (-1) and repeated instances, keeping the first occurrence. */
function uniqueInstances(items: number[]): number[] {
  return [...new Set(items.filter((i) => i >= 0))];
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

function computeSignature(
  node: NodeSpec,
  tasks: TaskDefinition[],
  taskKind: number[],
  tpreds: number[][],
  groupTasks: number[],
  groupRank: Map<number, number>,
  listedIn: Map<number, number[]>,
): Signature {
  const groupsHere = groupTasks
    .map((g, gi) => ({ g, gi }))
    .filter(({ g }) => tasks[g].roles !== null && matchesNode(tasks[g].roles as RoleSelector, node))
    .sort((a, b) => (groupRank.get(a.g) ?? 0) - (groupRank.get(b.g) ?? 0) || a.gi - b.gi);
  const hereSet = new Set(groupsHere.map(({ gi }) => gi));
  const present = new Uint8Array(tasks.length);
  const member = new Int32Array(tasks.length).fill(-1);
  tasks.forEach((t, i) => {
    if (taskKind[i] !== EXEC) return;
    const listing = (listedIn.get(i) ?? []).filter((gi) => hereSet.has(gi));
    const selected = t.roles !== null && matchesNode(t.roles, node);
    if (!selected && listing.length === 0) return;
    present[i] = 1;
    if (t.stage) return; // staged tasks follow the stage chain, not a group
    const owner = groupsHere.find(
      ({ g, gi }) =>
        listing.includes(gi) || (t.roles !== null && sharesRole(t.roles, tasks[g].roles as RoleSelector, node)),
    );
    if (owner) member[i] = owner.gi;
  });

  const absentMemo = new Map<number, LocalRef[]>();
  const resolve = (u: number, visiting: Set<number>): LocalRef[] => {
    if (taskKind[u] === STAGE) return [{ kind: 'stage', task: u }];
    if (taskKind[u] === GROUP) return [{ kind: 'group', task: u }];
    if (present[u]) return [{ kind: 'local', task: u }];
    const memo = absentMemo.get(u);
    if (memo) return memo;
    if (visiting.has(u)) return [];
    visiting.add(u);
    const out = tpreds[u].flatMap((w) => resolve(w, visiting));
    visiting.delete(u);
    absentMemo.set(u, out);
    return out;
  };
  const localPreds = tasks.map((_, t) => (present[t] ? tpreds[t].flatMap((u) => resolve(u, new Set())) : []));
  const memberSources = new Map<number, number[]>();
  const memberSinks = new Map<number, number[]>();
  const hasMemberSucc = new Uint8Array(tasks.length);
  tasks.forEach((_, t) => {
    const gi = member[t];
    if (gi < 0) return;
    const memberPreds = localPreds[t].filter((r) => r.kind === 'local' && member[r.task] === gi);
    for (const r of memberPreds) hasMemberSucc[r.task] = 1;
    if (memberPreds.length === 0) memberSources.set(gi, [...(memberSources.get(gi) ?? []), t]);
  });
  tasks.forEach((_, t) => {
    const gi = member[t];
    if (gi >= 0 && !hasMemberSucc[t]) memberSinks.set(gi, [...(memberSinks.get(gi) ?? []), t]);
  });
  return { present, member, localPreds, memberSources, memberSinks };
}

function addCrossDependencies(
  graph: InstanceGraph,
  tasks: TaskDefinition[],
  taskKind: number[],
  allNodes: NodeSpec[],
  nodeTaskInstance: Int32Array[],
  instancesOf: number[][],
  stageInstance: Int32Array,
  groupTasks: number[],
  groupMarker: Map<number, number>[],
  sync: number,
): void {
  const groupIndexOf = new Map(groupTasks.map((g, gi) => [g, gi]));
  const nameMatches = (name: string, isRegex: boolean): number[] => {
    if (!isRegex) return tasks.map((t, i) => (t.id === name ? i : -1)).filter((i) => i >= 0);
    const re = new RegExp(name);
    return tasks.map((t, i) => (re.test(t.id) ? i : -1)).filter((i) => i >= 0);
  };
  /** Instances of task u on node n (its group marker for a group, its sync point for a stage). */
  const onNode = (u: number, n: number): number => {
    if (taskKind[u] === STAGE) return stageInstance[u];
    if (taskKind[u] === GROUP) return groupMarker[groupIndexOf.get(u) as number].get(n) ?? -1;
    return nodeTaskInstance[n][u];
  };
  const nodesFor = (role: TaskDefinition['crossDepends'][number]['role']): number[] =>
    allNodes
      .map((_, n) => n)
      .filter((n) => role.kind === 'any' || (role.kind !== 'self' && matchesNode(role, allNodes[n])));

  tasks.forEach((t, ti) => {
    if (taskKind[ti] !== EXEC || instancesOf[ti].length === 0) return;
    const own = instancesOf[ti];
    const ownNode = (i: number): number => graph.node[i];
    for (const [k, dep] of t.crossDepends.entries()) {
      const targets = nameMatches(dep.name, dep.isRegex);
      if (dep.role.kind === 'self') {
        for (const c of own) {
          const producers = targets.map((u) => onNode(u, ownNode(c))).filter((p) => p >= 0 && p !== c);
          graph.connect([c], producers, dep.policy, '', sync);
        }
        continue;
      }
      const nodes = nodesFor(dep.role);
      const producers = uniqueInstances(targets.flatMap((u) => nodes.map((n) => onNode(u, n))));
      if (targets.includes(ti)) {
        for (const c of own)
          graph.connect(
            [c],
            producers.filter((p) => p !== c),
            dep.policy,
            '',
            sync,
          );
      } else {
        graph.connect(own, producers, dep.policy, `${t.id}:cross-depends[${k}]`, sync);
      }
    }
    for (const [k, dep] of t.crossDependedBy.entries()) {
      const targets = nameMatches(dep.name, dep.isRegex);
      if (dep.role.kind === 'self') {
        for (const p of own) {
          for (const u of targets) {
            const c = onNode(u, ownNode(p));
            if (c >= 0 && c !== p) graph.connect([c], [p], dep.policy, '', sync);
          }
        }
        continue;
      }
      const nodes = nodesFor(dep.role);
      const consumers = uniqueInstances(targets.flatMap((u) => nodes.map((n) => onNode(u, n))));
      if (targets.includes(ti)) {
        for (const c of consumers)
          graph.connect(
            [c],
            own.filter((p) => p !== c),
            dep.policy,
            '',
            sync,
          );
      } else {
        graph.connect(consumers, own, dep.policy, `${t.id}:cross-depended-by[${k}]`, sync);
      }
    }
  });
}

/**
 * The stage an instance belongs to: its own `stage:`; else the latest stage boundary before
 * it; else the earliest one after it; else `deployment`.
 */
function deriveStages(
  graph: InstanceGraph,
  tasks: TaskDefinition[],
  index: Map<string, number>,
  order: Int32Array,
): StageName[] {
  const n = graph.size;
  const after = new Int8Array(n).fill(-1); // stage index this instance is known to follow
  const before = new Int8Array(n).fill(3); // stage index this instance is known to precede
  const boundary = new Map<number, { start?: number; end?: number }>();
  STAGE_ORDER.forEach((s, k) => {
    boundary.set(index.get(STAGE_BOUNDS[s].start) as number, { start: k });
    boundary.set(index.get(STAGE_BOUNDS[s].end) as number, { end: k });
  });
  const own = (i: number): { start?: number; end?: number } | undefined =>
    graph.kind[i] === 'stage' ? boundary.get(graph.task[i]) : undefined;
  // What following / preceding each instance implies; only the six boundaries imply anything.
  const impliesAfter = new Int8Array(n).fill(-1);
  const impliesBefore = new Int8Array(n).fill(3);
  for (const [t, b] of boundary) {
    for (let i = 0; i < n; i++) {
      if (graph.task[i] !== t || graph.kind[i] !== 'stage') continue;
      impliesAfter[i] = b.start ?? (b.end as number) + 1;
      impliesBefore[i] = b.end ?? (b.start as number) - 1;
    }
  }
  for (let k = 0; k < order.length; k++) {
    const v = order[k];
    let a = after[v];
    for (const p of graph.preds[v]) {
      if (after[p] > a) a = after[p];
      if (impliesAfter[p] > a) a = impliesAfter[p];
    }
    after[v] = a;
  }
  for (let k = order.length - 1; k >= 0; k--) {
    const v = order[k];
    const limit = Math.min(before[v], impliesBefore[v]);
    for (const p of graph.preds[v]) if (limit < before[p]) before[p] = limit;
  }
  const explicit = tasks.map((t) => (t.stage ? STAGE_ORDER.indexOf(t.stage.name) : -1));
  const stages: StageName[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const b = graph.kind[i] === 'stage' ? own(i) : undefined;
    let k: number;
    if (graph.kind[i] === 'task' && explicit[graph.task[i]] >= 0) k = explicit[graph.task[i]];
    else if (b) k = (b.start ?? b.end) as number;
    else if (after[i] >= 0) k = after[i];
    else if (before[i] <= 2) k = Math.max(0, before[i]);
    else k = 1;
    stages[i] = STAGE_ORDER[Math.min(2, Math.max(0, k))];
  }
  return stages;
}

function applySkipFilters(
  graph: InstanceGraph,
  tasks: TaskDefinition[],
  skip: string[] | undefined,
  only: string[] | undefined,
  skipped: (SkipReason | undefined)[],
): void {
  if (!skip?.length && !only?.length) return;
  const skipSet = new Set(skip ?? []);
  const onlySet = only?.length ? new Set(only) : undefined;
  for (let i = 0; i < graph.size; i++) {
    if (graph.kind[i] !== 'task' || skipped[i]) continue;
    const id = tasks[graph.task[i]].id;
    if (skipSet.has(id) || (onlySet && !onlySet.has(id))) skipped[i] = 'filter';
  }
}
