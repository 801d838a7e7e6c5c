import type { InstanceKind } from './plan-types';

/** Above this many edges, a many-to-many dependency goes through one barrier instance. */
const DIRECT_EDGE_LIMIT = 64;

/**
 * A growing graph of plan instances in parallel arrays. Plans reach a million instances,
 * so nothing here allocates per instance beyond the predecessor list.
 */
export class InstanceGraph {
  readonly task: number[] = [];
  readonly node: number[] = [];
  readonly kind: InstanceKind[] = [];
  readonly preds: number[][] = [];
  readonly anyPreds = new Map<number, number[][]>();
  readonly syntheticNames = new Map<number, string>();
  private readonly usedNames = new Set<string>();

  get size(): number {
    return this.task.length;
  }

  add(task: number, node: number, kind: InstanceKind, name?: string): number {
    const id = this.task.length;
    this.task.push(task);
    this.node.push(node);
    this.kind.push(kind);
    this.preds.push([]);
    if (name !== undefined) this.syntheticNames.set(id, name);
    return id;
  }

  /** A sync point on the `sync` node with a unique name derived from `label`. */
  addSynthetic(label: string, syncNode: number, kind: InstanceKind, task = -1): number {
    let name = label;
    for (let n = 2; this.usedNames.has(name); n++) name = `${label}#${n}`;
    this.usedNames.add(name);
    return this.add(task, syncNode, kind, name);
  }

  requireAny(consumer: number, producers: number[]): void {
    const list = this.anyPreds.get(consumer);
    if (list) list.push(producers);
    else this.anyPreds.set(consumer, [producers]);
  }

  /**
   * Makes every consumer wait for the producers (`all`: every one of them; `any`: at least one).
   * Large many-to-many sets go through a barrier so edges grow linearly, not quadratically.
   */
  connect(
    consumers: number[],
    producers: number[],
    policy: 'all' | 'any',
    barrierLabel: string,
    syncNode: number,
  ): void {
    if (producers.length === 0 || consumers.length === 0) return;
    if (policy === 'any') {
      if (consumers.length === 1) {
        this.requireAny(consumers[0], producers);
        return;
      }
      const barrier = this.addSynthetic(barrierLabel, syncNode, 'barrier');
      this.requireAny(barrier, producers);
      for (const c of consumers) this.preds[c].push(barrier);
      return;
    }
    if (consumers.length === 1 || producers.length === 1 || consumers.length * producers.length <= DIRECT_EDGE_LIMIT) {
      for (const c of consumers) for (const p of producers) this.preds[c].push(p);
      return;
    }
    const barrier = this.addSynthetic(barrierLabel, syncNode, 'barrier');
    for (const p of producers) this.preds[barrier].push(p);
    for (const c of consumers) this.preds[c].push(barrier);
  }

  /** Removes duplicate and self edges (one pass, a stamp array instead of a Set per instance). */
  dedupe(): void {
    const stamp = new Int32Array(this.size).fill(-1);
    for (let i = 0; i < this.size; i++) {
      const list = this.preds[i];
      if (list.length === 0) continue;
      let w = 0;
      for (const p of list) {
        if (p === i || stamp[p] === i) continue;
        stamp[p] = i;
        list[w++] = p;
      }
      list.length = w;
    }
  }
}

/** Successor lists in CSR form, built from predecessor lists (any-of groups count as edges). */
export interface Successors {
  offsets: Int32Array;
  targets: Int32Array;
}

export function allPreds(preds: number[][], anyPreds: Map<number, number[][]>, i: number): number[] {
  const groups = anyPreds.get(i);
  if (!groups) return preds[i];
  return [...preds[i], ...groups.flat()];
}

export function buildSuccessors(preds: number[][], anyPreds: Map<number, number[][]>): Successors {
  const n = preds.length;
  const offsets = new Int32Array(n + 1);
  for (let i = 0; i < n; i++) for (const p of allPreds(preds, anyPreds, i)) offsets[p + 1]++;
  for (let i = 0; i < n; i++) offsets[i + 1] += offsets[i];
  const fill = offsets.slice(0, n);
  const targets = new Int32Array(offsets[n]);
  for (let i = 0; i < n; i++) for (const p of allPreds(preds, anyPreds, i)) targets[fill[p]++] = i;
  return { offsets, targets };
}

/**
 * Kahn's algorithm. Returns the instances in topological order and each one's level
 * (longest path from a source); `order.length < n` means there is a cycle.
 */
export function topologicalLevels(
  preds: number[][],
  anyPreds: Map<number, number[][]>,
  succ: Successors,
): { order: Int32Array; level: Int32Array; count: number } {
  const n = preds.length;
  const indegree = new Int32Array(n);
  for (let i = 0; i < n; i++) indegree[i] = allPreds(preds, anyPreds, i).length;
  const order = new Int32Array(n);
  const level = new Int32Array(n);
  let head = 0;
  let tail = 0;
  for (let i = 0; i < n; i++) if (indegree[i] === 0) order[tail++] = i;
  while (head < tail) {
    const v = order[head++];
    for (let k = succ.offsets[v]; k < succ.offsets[v + 1]; k++) {
      const s = succ.targets[k];
      if (level[v] + 1 > level[s]) level[s] = level[v] + 1;
      if (--indegree[s] === 0) order[tail++] = s;
    }
  }
  return { order, level, count: tail };
}

/**
 * Finds one cycle among instances that Kahn's algorithm could not order and returns it in
 * execution order, first instance repeated at the end.
 */
export function findCycle(
  preds: number[][],
  anyPreds: Map<number, number[][]>,
  ordered: Int32Array,
  count: number,
): number[] {
  const n = preds.length;
  const done = new Uint8Array(n);
  for (let k = 0; k < count; k++) done[ordered[k]] = 1;
  let start = 0;
  while (start < n && done[start]) start++;
  // Every unordered instance has an unordered predecessor: walk back until one repeats.
  const seenAt = new Map<number, number>();
  const walk: number[] = [];
  let v = start;
  while (!seenAt.has(v)) {
    seenAt.set(v, walk.length);
    walk.push(v);
    v = allPreds(preds, anyPreds, v).find((p) => !done[p]) as number;
  }
  const cycle = walk.slice(seenAt.get(v)).reverse();
  return [...cycle, cycle[0]];
}

/** Instances sorted by level, ties by index: a valid execution order that reads by priority. */
export function sortByLevel(level: Int32Array): Int32Array {
  let max = 0;
  for (const l of level) if (l > max) max = l;
  const start = new Int32Array(max + 2);
  for (const l of level) start[l + 1]++;
  for (let l = 0; l <= max; l++) start[l + 1] += start[l];
  const order = new Int32Array(level.length);
  for (let i = 0; i < level.length; i++) order[start[level[i]]++] = i;
  return order;
}
