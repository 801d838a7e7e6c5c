import { matchesNode } from '@granule/task-model';
import type { CrossRole } from '@granule/task-model';
import { EXEC, GROUP, STAGE } from './plan-context';
import type { PlanContext } from './plan-context';

/** Drops missing (-1) and repeated instances, keeping the first occurrence. */
function uniqueInstances(items: number[]): number[] {
  return [...new Set(items.filter((i) => i >= 0))];
}

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

/** Node indices a cross-dependency's `role` selects (`self` selects none here: it is per node). */
function nodesFor(ctx: PlanContext, role: CrossRole): number[] {
  return ctx.allNodes
    .map((_, n) => n)
    .filter((n) => role.kind === 'any' || (role.kind !== 'self' && matchesNode(role, ctx.allNodes[n])));
}

/**
 * Adds the cross-node edges of every task: `cross-depends` makes its instances wait for the
 * matching instances on the selected nodes, `cross-depended-by` the reverse.
 */
export function addCrossDependencies(ctx: PlanContext): void {
  const { graph, sync } = ctx;
  ctx.tasks.forEach((t, ti) => {
    if (ctx.taskKind[ti] !== EXEC || ctx.instancesOf[ti].length === 0) return;
    const own = ctx.instancesOf[ti];
    for (const [k, dep] of t.crossDepends.entries()) {
      const targets = nameMatches(ctx, dep.name, dep.isRegex);
      if (dep.role.kind === 'self') {
        for (const c of own) {
          const producers = targets.map((u) => onNode(ctx, u, graph.node[c])).filter((p) => p >= 0 && p !== c);
          graph.connect([c], producers, dep.policy, '', sync);
        }
        continue;
      }
      const nodes = nodesFor(ctx, dep.role);
      const producers = uniqueInstances(targets.flatMap((u) => nodes.map((n) => onNode(ctx, u, n))));
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
      const targets = nameMatches(ctx, dep.name, dep.isRegex);
      if (dep.role.kind === 'self') {
        for (const p of own) {
          for (const u of targets) {
            const c = onNode(ctx, u, graph.node[p]);
            if (c >= 0 && c !== p) graph.connect([c], [p], dep.policy, '', sync);
          }
        }
        continue;
      }
      const nodes = nodesFor(ctx, dep.role);
      const consumers = uniqueInstances(targets.flatMap((u) => nodes.map((n) => onNode(ctx, u, n))));
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
