import type { StageName, TaskDefinition } from '@granule/task-model';
import type { InstanceGraph } from './instance-graph';
import { STAGE_BOUNDS, STAGE_ORDER } from './standard-stages';

/**
 * The stage an instance belongs to: its own `stage:`; else the latest stage boundary before
 * it; else the earliest one after it; else `deployment`.
 */
export function deriveStages(
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
