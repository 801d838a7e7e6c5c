import { buildSuccessors, sortByLevel, topologicalLevels } from './instance-graph';
import type { Successors } from './instance-graph';
import type { Plan, PlanFilters } from './plan-types';
import { PlanError } from './planner-errors';

function closure(seeds: number[], next: (v: number, visit: (w: number) => void) => void, n: number): Uint8Array {
  const seen = new Uint8Array(n);
  const stack = [...seeds];
  for (const s of seeds) seen[s] = 1;
  while (stack.length > 0) {
    const v = stack.pop() as number;
    next(v, (w) => {
      if (!seen[w]) {
        seen[w] = 1;
        stack.push(w);
      }
    });
  }
  return seen;
}

/**
 * Applies `--start` (the task and everything after it) and `--end` (the task and everything
 * it needs); with both, their intersection. The selection is convex, so dropping edges to
 * removed instances loses no ordering between the instances that stay.
 */
export function selectSubgraph(plan: Plan, succ: Successors, filters: PlanFilters): Plan {
  if (!filters.start && !filters.end) return plan;
  const n = plan.instTask.length;
  const seedsOf = (flag: string, id: string): number[] => {
    const t = plan.tasks.findIndex((task) => task.id === id);
    const seeds: number[] = [];
    for (let i = 0; i < n; i++) if (plan.instTask[i] === t) seeds.push(i);
    if (seeds.length === 0) {
      throw new PlanError([
        {
          severity: 'error',
          code: 'PLAN_UNKNOWN_FILTER_TASK',
          message: `${flag} ${id}: the task runs on none of the planned nodes`,
        },
      ]);
    }
    return seeds;
  };
  const keep = new Uint8Array(n).fill(1);
  if (filters.start) {
    const after = closure(
      seedsOf('--start', filters.start),
      (v, visit) => {
        for (let k = succ.offsets[v]; k < succ.offsets[v + 1]; k++) visit(succ.targets[k]);
      },
      n,
    );
    for (let i = 0; i < n; i++) keep[i] &= after[i];
  }
  if (filters.end) {
    const before = closure(
      seedsOf('--end', filters.end),
      (v, visit) => {
        for (const p of plan.preds[v]) visit(p);
        for (const group of plan.anyPreds.get(v) ?? []) for (const p of group) visit(p);
      },
      n,
    );
    for (let i = 0; i < n; i++) keep[i] &= before[i];
  }

  const newIndex = new Int32Array(n).fill(-1);
  const kept: number[] = [];
  for (let i = 0; i < n; i++) if (keep[i]) newIndex[i] = kept.push(i) - 1;
  const preds = kept.map((i) => plan.preds[i].filter((p) => keep[p]).map((p) => newIndex[p]));
  const anyPreds = new Map<number, number[][]>();
  for (const [i, groups] of plan.anyPreds) {
    if (!keep[i]) continue;
    // A member outside the selection ran before it (only --start removes predecessors), so
    // its any-of group is already satisfied.
    const remaining = groups.filter((g) => g.every((p) => keep[p])).map((g) => g.map((p) => newIndex[p]));
    if (remaining.length > 0) anyPreds.set(newIndex[i], remaining);
  }
  const syntheticNames = new Map<number, string>();
  for (const [i, name] of plan.syntheticNames) if (keep[i]) syntheticNames.set(newIndex[i], name);
  const topo = topologicalLevels(preds, anyPreds, buildSuccessors(preds, anyPreds));
  return {
    ...plan,
    instTask: Int32Array.from(kept, (i) => plan.instTask[i]),
    instNode: Int32Array.from(kept, (i) => plan.instNode[i]),
    instKind: kept.map((i) => plan.instKind[i]),
    syntheticNames,
    preds,
    anyPreds,
    skipped: kept.map((i) => plan.skipped[i]),
    stage: kept.map((i) => plan.stage[i]),
    priority: topo.level,
    order: sortByLevel(topo.level),
  };
}
