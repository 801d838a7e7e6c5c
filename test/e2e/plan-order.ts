import type { StoredEvent } from './stack';

/** One instance of `granule plan -o json`. */
export interface PlannedInstance {
  task: string;
  node: string;
  type: string;
  requires: string[];
  requires_any?: string[][];
  skipped: boolean;
}

/**
 * For each instance that does work, the instances doing work it must wait for: its `requires`,
 * looking through sync points (virtual node `sync`) and skipped instances to the work behind them.
 */
export function workPredecessors(instances: PlannedInstance[]): Map<string, string[]> {
  const byKey = new Map(instances.map((i) => [`${i.task}@${i.node}`, i]));
  const doesWork = (i: PlannedInstance): boolean => i.node !== 'sync' && !i.skipped;
  const memo = new Map<string, Set<string>>();
  const behind = (key: string): Set<string> => {
    const known = memo.get(key);
    if (known) return known;
    const out = new Set<string>();
    for (const r of byKey.get(key)?.requires ?? []) {
      const p = byKey.get(r);
      if (!p) continue;
      if (doesWork(p)) out.add(r);
      else for (const q of behind(r)) out.add(q);
    }
    memo.set(key, out);
    return out;
  };
  const result = new Map<string, string[]>();
  for (const i of instances)
    if (doesWork(i)) result.set(`${i.task}@${i.node}`, [...behind(`${i.task}@${i.node}`)].sort());
  return result;
}

/**
 * Every `(before, after)` pair where `after` was dispatched without `before` having succeeded
 * earlier in the log: empty when the run respected the plan's edges.
 */
export function orderViolations(events: StoredEvent[], predecessors: Map<string, string[]>): string[] {
  const succeededAt = new Map<string, number>();
  const dispatchedAt = new Map<string, number>();
  for (const e of events) {
    const key = String(e.data.key);
    if (e.type === 'TaskSucceeded' && !succeededAt.has(key)) succeededAt.set(key, e.version);
    if (e.type === 'TaskDispatched' && !dispatchedAt.has(key)) dispatchedAt.set(key, e.version);
  }
  const out: string[] = [];
  for (const [after, befores] of predecessors) {
    const d = dispatchedAt.get(after);
    if (d === undefined) continue;
    for (const before of befores) {
      const s = succeededAt.get(before);
      if (s === undefined || s > d)
        out.push(`${after} (dispatched #${d}) before ${before} succeeded (${s === undefined ? 'never' : `#${s}`})`);
    }
  }
  return out;
}
