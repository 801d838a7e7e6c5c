/**
 * How a node chooses among its ready tasks. The simulator and the orchestrator both rank
 * instances with `readyTaskRank` and order them with `readyTaskComparator`, so a simulated
 * run starts tasks in the order a real one does.
 *
 * - `longest-remaining-work` (the default): the task with the longest chain of work still
 *   behind it (its own duration plus the longest such chain of any successor) goes first, the
 *   critical-path rule of list scheduling.
 * - `astute-weight`: astute's `Task#weight` (fuel-astute lib/fuel_deployment/task.rb): the sum,
 *   over every successor, of 1 when it runs on the same node or 10 when it runs elsewhere, plus
 *   that successor's own weight. It counts paths, so on large plans it grows past any number
 *   (`Infinity` here), and ties fall back to plan order. Offered to compare with Fuel (ADR 0013).
 */
export const READY_ORDER_RULES = ['longest-remaining-work', 'astute-weight'] as const;
export type ReadyOrderRule = (typeof READY_ORDER_RULES)[number];

/** The plan as the ranking needs it; the planner's `Plan` and the executor's plan both provide it. */
export interface ReadyRankInput {
  /** Every instance, each after all its predecessors. */
  order: ArrayLike<number>;
  preds: number[][];
  /** Any-of predecessor groups by instance (each producer counts as a predecessor here). */
  anyPreds: Map<number, number[][]>;
  /** Node of each instance; sync points carry a value no real node has. */
  node: ArrayLike<number>;
  /** Duration of each instance; 0 for what does no work (sync points, skipped tasks). */
  duration: Float64Array;
}

function longestRemainingWork(input: ReadyRankInput): Float64Array {
  const { order, preds, anyPreds, duration } = input;
  const work = new Float64Array(duration.length);
  for (let k = order.length - 1; k >= 0; k--) {
    const v = order[k];
    work[v] += duration[v];
    const w = work[v];
    for (const p of preds[v]) if (w > work[p]) work[p] = w;
    const groups = anyPreds.get(v);
    if (groups) for (const group of groups) for (const p of group) if (w > work[p]) work[p] = w;
  }
  return work;
}

function astuteWeight(input: ReadyRankInput): Float64Array {
  const { order, preds, anyPreds, node } = input;
  const weight = new Float64Array(input.duration.length);
  // Reverse order: every successor's weight is final before it is added to its predecessors.
  for (let k = order.length - 1; k >= 0; k--) {
    const v = order[k];
    const add = (p: number): void => {
      weight[p] += (node[p] === node[v] ? 1 : 10) + weight[v];
    };
    for (const p of preds[v]) add(p);
    const groups = anyPreds.get(v);
    if (groups) for (const group of groups) for (const p of group) add(p);
  }
  return weight;
}

/** Each instance's rank under `rule`: among ready tasks, a higher rank goes first. */
export function readyTaskRank(input: ReadyRankInput, rule: ReadyOrderRule = 'longest-remaining-work'): Float64Array {
  return rule === 'astute-weight' ? astuteWeight(input) : longestRemainingWork(input);
}

/**
 * Orders ready instances: higher rank first, then earlier in plan order (`position`, when
 * given, is each instance's place in the printed plan; otherwise the index is that place).
 */
export function readyTaskComparator(rank: Float64Array, position?: Int32Array): (a: number, b: number) => number {
  if (!position) return (a, b) => rank[b] - rank[a] || a - b;
  return (a, b) => rank[b] - rank[a] || position[a] - position[b];
}
