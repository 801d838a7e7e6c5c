import { matchesNode } from '@granule/task-model';
import type { CrossDependency, CrossRole } from '@granule/task-model';
import { EXEC, GROUP, STAGE } from './plan-context';
import type { PlanContext } from './plan-context';
import { MASTER_NODE } from './plan-types';

/** Task indices a cross-dependency's `name` (an id or a regex) matches. */
function nameMatches(ctx: PlanContext, name: string, isRegex: boolean): number[] {
  if (!isRegex) return ctx.tasks.map((t, i) => (t.id === name ? i : -1)).filter((i) => i >= 0);
  const re = new RegExp(name);
  return ctx.tasks.map((t, i) => (re.test(t.id) ? i : -1)).filter((i) => i >= 0);
}

/** The instance of task u on node n: its group marker for a group, its sync point for a stage. */
function onNode(ctx: PlanContext, u: number, n: number): number {
  if (ctx.taskKind[u] === STAGE) return ctx.stageInstance[u];
  if (ctx.taskKind[u] === GROUP) return ctx.groupMarker[ctx.groups.indexOf.get(u) as number].get(n) ?? -1;
  return ctx.nodeTaskInstance[n][u];
}

/**
 * Node indices a cross-dependency's `role` selects, in NODES.yaml order. Omitted means `'*'`:
 * the deployment's nodes, never the master host (Fuel's default role). `self` is per node.
 */
function nodesFor(ctx: PlanContext, role: CrossRole): number[] {
  const out: number[] = [];
  ctx.allNodes.forEach((node, n) => {
    if (role.kind === 'self') return;
    if (role.kind === 'any' ? node.uid !== MASTER_NODE : matchesNode(role, node)) out.push(n);
  });
  return out;
}

/**
 * The matching instances on each node, node by node (NODES.yaml order), without `except`;
 * nodes with none are left out. An instance shared by nodes (a stage) is listed once.
 */
function instancesByNode(ctx: PlanContext, targets: number[], nodes: number[], except = -1): number[][] {
  const seen = new Set<number>();
  const out: number[][] = [];
  for (const n of nodes) {
    const here: number[] = [];
    for (const u of targets) {
      const i = onNode(ctx, u, n);
      if (i < 0 || i === except || seen.has(i)) continue;
      seen.add(i);
      here.push(i);
    }
    if (here.length > 0) out.push(here);
  }
  return out;
}

/**
 * Makes `consumers` wait for what the dependency names on the selected nodes. `all`: every
 * instance on every node. `any`: every instance on at least one of the nodes (Fuel resolves the
 * role to one node and waits for the named tasks there; here whichever node finishes first).
 */
function waitFor(ctx: PlanContext, consumers: number[], byNode: number[][], dep: CrossDependency, label: string) {
  const { graph, sync } = ctx;
  // One candidate node leaves nothing to choose: wait for all it runs (so `self` ignores the policy, as in Fuel).
  const policy = byNode.length <= 1 ? 'all' : dep.policy;
  if (policy === 'all' || byNode.every((here) => here.length === 1)) {
    graph.connect(consumers, byNode.flat(), policy, label, sync);
    return;
  }
  const choices = byNode.map((here) => {
    if (here.length === 1) return here[0];
    const join = graph.addSynthetic(label ? `${label}:node` : 'cross-depends:node', sync, 'barrier');
    for (const p of here) graph.preds[join].push(p);
    return join;
  });
  graph.connect(consumers, choices, 'any', label, sync);
}

/** `cross-depends`: the task's instances wait for the named tasks on the nodes `role` selects. */
function addCrossDepends(ctx: PlanContext, ti: number, k: number, dep: CrossDependency): void {
  const own = ctx.instancesOf[ti];
  const targets = nameMatches(ctx, dep.name, dep.isRegex);
  if (dep.role.kind === 'self') {
    for (const c of own) waitFor(ctx, [c], instancesByNode(ctx, targets, [ctx.graph.node[c]], c), dep, '');
    return;
  }
  const nodes = nodesFor(ctx, dep.role);
  // A task that names itself waits for its other instances, never for itself.
  if (targets.includes(ti)) for (const c of own) waitFor(ctx, [c], instancesByNode(ctx, targets, nodes, c), dep, '');
  else waitFor(ctx, own, instancesByNode(ctx, targets, nodes), dep, `${ctx.tasks[ti].id}:cross-depends[${k}]`);
}

/**
 * `cross-depended-by`: the named tasks on the nodes `role` selects wait for this task's
 * instances. With `policy: any` the role resolves to one node, as in Fuel's
 * `expand_cross_dependencies`: the first selected node (NODES.yaml order) that runs a named task;
 * the named tasks there wait for every instance of this task.
 */
function addCrossDependedBy(ctx: PlanContext, ti: number, k: number, dep: CrossDependency): void {
  const { graph, sync } = ctx;
  const own = ctx.instancesOf[ti];
  const targets = nameMatches(ctx, dep.name, dep.isRegex);
  if (dep.role.kind === 'self') {
    for (const p of own)
      for (const c of instancesByNode(ctx, targets, [graph.node[p]], p).flat())
        graph.connect([c], [p], 'all', '', sync);
    return;
  }
  let byNode = instancesByNode(ctx, targets, nodesFor(ctx, dep.role));
  if (dep.policy === 'any') byNode = byNode.slice(0, 1);
  const consumers = byNode.flat();
  if (targets.includes(ti))
    for (const c of consumers)
      graph.connect(
        [c],
        own.filter((p) => p !== c),
        'all',
        '',
        sync,
      );
  else graph.connect(consumers, own, 'all', `${ctx.tasks[ti].id}:cross-depended-by[${k}]`, sync);
}

/**
 * Adds the cross-node edges of every task: `cross-depends` makes its instances wait for the
 * matching instances on the selected nodes, `cross-depended-by` the reverse.
 */
export function addCrossDependencies(ctx: PlanContext): void {
  ctx.tasks.forEach((t, ti) => {
    if (ctx.taskKind[ti] !== EXEC || ctx.instancesOf[ti].length === 0) return;
    t.crossDepends.forEach((dep, k) => addCrossDepends(ctx, ti, k, dep));
    t.crossDependedBy.forEach((dep, k) => addCrossDependedBy(ctx, ti, k, dep));
  });
}
