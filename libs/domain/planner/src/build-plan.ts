import type { Diagnostic } from '@granule/core';
import { resolveFaultTolerance } from '@granule/task-model';
import { applyConditions } from './apply-conditions';
import { addCrossDependencies } from './cross-dependencies';
import { deriveStages } from './derive-stages';
import { buildSuccessors, findCycle, sortByLevel, topologicalLevels } from './instance-graph';
import type { Successors } from './instance-graph';
import { signNodes } from './node-signature';
import { EXEC, GROUP, STAGE, createInstances, layoutGroups, readPlanInput } from './plan-context';
import type { PlanContext } from './plan-context';
import type { Plan, PlanGroup, PlanRequest, SkipReason } from './plan-types';
import { PlanCycleError, PlanError } from './planner-errors';
import { STAGE_BOUNDS, STAGE_ORDER, STANDARD_STAGE_IDS } from './standard-stages';
import { selectSubgraph } from './subgraph';

/**
 * Builds the deployment plan: one instance per task per node, with same-node edges from
 * requires / required_for (through tasks absent on a node), group and stage sync points,
 * stage-postfix ordering, group strategies, cross-node edges, conditions and filters.
 * Throws `PlanError` (bad references, filters, conditions) or `PlanCycleError`.
 */
export function buildPlan(request: PlanRequest): Plan {
  const input = readPlanInput(request);
  const groups = layoutGroups(input);
  const ctx = createInstances(input, groups, signNodes(input, groups));
  addSyncPointEdges(ctx);
  addSameNodeEdges(ctx);
  addGroupBatches(ctx);
  addStageSteps(ctx);
  addCrossDependencies(ctx);
  ctx.graph.dedupe();
  const { succ, topo } = orderInstances(ctx);
  const skipped = markSkipped(ctx, request);
  return selectSubgraph(compilePlan(ctx, topo, skipped), succ, ctx.filters);
}

/** Appends without spreading (a spread of 100k+ arguments overflows the stack). */
function pushAll(target: number[], items: readonly number[]): void {
  for (const item of items) target.push(item);
}

/**
 * The standard stage chain, and the predecessors of stage sync points and group starts. A
 * template predecessor resolves cluster-wide: a stage to its sync point, a group to its end, a
 * task to all its instances (or, when it has none, to what it needs).
 */
function addSyncPointEdges(ctx: PlanContext): void {
  const { graph, tasks, index, taskKind, tpreds, instancesOf, stageInstance, groups, groupStart, groupEnd } = ctx;
  const memo = new Map<number, number[]>();
  const resolveGlobal = (u: number, visiting: Set<number>): number[] => {
    if (taskKind[u] === STAGE) return [stageInstance[u]];
    if (taskKind[u] === GROUP) return [groupEnd[groups.indexOf.get(u) as number]];
    const own = instancesOf[u];
    if (own.length > 0) return own;
    const known = memo.get(u);
    if (known) return known;
    if (visiting.has(u)) return [];
    visiting.add(u);
    const out = tpreds[u].flatMap((w) => resolveGlobal(w, visiting));
    visiting.delete(u);
    memo.set(u, out);
    return out;
  };
  for (let k = 1; k < STANDARD_STAGE_IDS.length; k++) {
    graph.preds[stageInstance[index.get(STANDARD_STAGE_IDS[k]) as number]].push(
      stageInstance[index.get(STANDARD_STAGE_IDS[k - 1]) as number],
    );
  }
  tasks.forEach((_, i) => {
    if (taskKind[i] === STAGE)
      for (const u of tpreds[i]) pushAll(graph.preds[stageInstance[i]], resolveGlobal(u, new Set()));
  });
  groups.task.forEach((g, gi) => {
    for (const u of tpreds[g]) pushAll(graph.preds[groupStart[gi]], resolveGlobal(u, new Set()));
    const markers = [...ctx.groupMarker[gi].values()];
    pushAll(graph.preds[groupEnd[gi]], markers.length > 0 ? markers : [groupStart[gi]]);
  });
}

/** Same-node edges of task instances, as each node's signature resolved them. */
function addSameNodeEdges(ctx: PlanContext): void {
  const { graph, tasks, stageInstance, groupEnd, groups } = ctx;
  ctx.allNodes.forEach((_, n) => {
    const sig = ctx.nodeSignature[n];
    const local = ctx.nodeTaskInstance[n];
    for (let t = 0; t < tasks.length; t++) {
      const id = local[t];
      if (id < 0) continue;
      for (const ref of sig.localPreds[t]) {
        if (ref.kind === 'local') graph.preds[id].push(local[ref.task]);
        else if (ref.kind === 'stage') graph.preds[id].push(stageInstance[ref.task]);
        else graph.preds[id].push(groupEnd[groups.indexOf.get(ref.task) as number]);
      }
    }
  });
}

/**
 * Groups run their nodes in batches by strategy: each member's first tasks wait for the batch
 * gate (the group start, then the previous batch's markers), and the node's group marker waits
 * for its last member tasks.
 */
function addGroupBatches(ctx: PlanContext): void {
  const { graph, tasks, groups, groupMarker, sync } = ctx;
  groups.task.forEach((g, gi) => {
    const strategy = tasks[g].strategy;
    const size = strategy?.type === 'one_by_one' ? 1 : (strategy?.amount ?? Number.MAX_SAFE_INTEGER);
    const members = groups.nodes[gi];
    let gate = [ctx.groupStart[gi]];
    for (let b = 0; b * size < members.length; b++) {
      const batch = members.slice(b * size, (b + 1) * size);
      const sources: number[] = [];
      for (const n of batch) {
        const sig = ctx.nodeSignature[n];
        const marker = groupMarker[gi].get(n) as number;
        const firsts = sig.memberSources.get(gi);
        if (!firsts) {
          sources.push(marker);
          continue;
        }
        for (const t of firsts) sources.push(ctx.nodeTaskInstance[n][t]);
        for (const t of sig.memberSinks.get(gi) as number[]) graph.preds[marker].push(ctx.nodeTaskInstance[n][t]);
      }
      graph.connect(sources, gate, 'all', `${tasks[g].id}:batch-${b + 1}`, sync);
      gate = batch.map((n) => groupMarker[gi].get(n) as number);
    }
  });
}

/**
 * Tasks with a `stage:` run between that stage's bounds in postfix order (seed 000), then
 * plugin name, then file order; each step after the previous one on every node.
 */
function addStageSteps(ctx: PlanContext): void {
  const { graph, tasks, index, taskKind, instancesOf, stageInstance, sync } = ctx;
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
}

/** Orders the whole graph, before any filter hides part of it; throws `PlanCycleError` on a cycle. */
function orderInstances(ctx: PlanContext): { succ: Successors; topo: ReturnType<typeof topologicalLevels> } {
  const { graph, tasks, nodeNames } = ctx;
  const succ = buildSuccessors(graph.preds, graph.anyPreds);
  const topo = topologicalLevels(graph.preds, graph.anyPreds, succ);
  if (topo.count < graph.size) {
    const cycle = findCycle(graph.preds, graph.anyPreds, topo.order, topo.count);
    const name = (i: number): string =>
      `${graph.syntheticNames.get(i) ?? tasks[graph.task[i]].id}@${nodeNames[graph.node[i]]}`;
    throw new PlanCycleError(cycle.map(name));
  }
  return { succ, topo };
}

/** Why each instance is skipped: its type, a false condition, then `--skip` / `--only`. */
function markSkipped(ctx: PlanContext, request: PlanRequest): (SkipReason | undefined)[] {
  const { graph, tasks, filters } = ctx;
  const skipped: (SkipReason | undefined)[] = new Array(graph.size).fill(undefined);
  graph.task.forEach((t, i) => {
    if (t >= 0 && graph.kind[i] === 'task' && tasks[t].type === 'skipped') skipped[i] = 'type';
  });
  const diags: Diagnostic[] = [];
  applyConditions(graph, tasks, ctx.allNodes, ctx.nodes, request.cluster, skipped, diags);
  if (diags.length > 0) throw new PlanError(diags);
  if (!filters.skip?.length && !filters.only?.length) return skipped;
  const skipSet = new Set(filters.skip ?? []);
  const onlySet = filters.only?.length ? new Set(filters.only) : undefined;
  for (let i = 0; i < graph.size; i++) {
    if (graph.kind[i] !== 'task' || skipped[i]) continue;
    const id = tasks[graph.task[i]].id;
    if (skipSet.has(id) || (onlySet && !onlySet.has(id))) skipped[i] = 'filter';
  }
  return skipped;
}

/** The plan in its compact form, with fault-tolerance groups and task concurrency. */
function compilePlan(
  ctx: PlanContext,
  topo: ReturnType<typeof topologicalLevels>,
  skipped: (SkipReason | undefined)[],
): Plan {
  const { graph, tasks, taskKind, groups, nodeNames } = ctx;
  const planGroups: PlanGroup[] = groups.task.map((g, gi) => ({
    id: tasks[g].id,
    nodes: groups.nodes[gi].map((n) => nodeNames[n]),
    faultTolerance: resolveFaultTolerance(tasks[g].faultTolerance, groups.nodes[gi].length),
    ...(tasks[g].strategy ? { strategy: tasks[g].strategy } : {}),
  }));
  const concurrency: Record<string, number> = {};
  tasks.forEach((t, i) => {
    if (taskKind[i] !== EXEC || !t.strategy) return;
    if (t.strategy.type === 'one_by_one') concurrency[t.id] = 1;
    else if (t.strategy.amount) concurrency[t.id] = t.strategy.amount;
  });
  return {
    nodeNames,
    tasks,
    instTask: Int32Array.from(graph.task),
    instNode: Int32Array.from(graph.node),
    instKind: graph.kind,
    syntheticNames: graph.syntheticNames,
    preds: graph.preds,
    anyPreds: graph.anyPreds,
    skipped,
    stage: deriveStages(graph, tasks, ctx.index, topo.order),
    priority: topo.level,
    order: sortByLevel(topo.level),
    groups: planGroups,
    concurrency,
  };
}
