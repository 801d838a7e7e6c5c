import { instanceName, taskName } from './plan-output';
import type { Plan } from './plan-types';
import { MinHeap } from './min-heap';
import { readyTaskComparator, readyTaskRank } from './ready-order';
import type { ReadyOrderRule } from './ready-order';

export interface SimulationOptions {
  /** Seconds per task id; tasks not listed take 1 unit. */
  durations?: Record<string, number>;
  /** How a node chooses among its ready tasks (default: the orchestrator's rule). */
  readyOrder?: ReadyOrderRule;
}

export interface SimulationEntry {
  task: string;
  node: string;
  start: number;
  end: number;
  skipped?: boolean;
}

export interface SimulationResult {
  makespan: number;
  /** Task instances on real nodes, by start time. */
  timeline: SimulationEntry[];
  /** The chain of work that decided the makespan, `task@node`, sync points left out. */
  critical_path: string[];
}

/** Per-instance duration: the given seconds (default 1) for real, non-skipped work; 0 otherwise. */
export function instanceDurations(plan: Plan, durations: Record<string, number> = {}): Float64Array {
  const out = new Float64Array(plan.instTask.length);
  for (let i = 0; i < out.length; i++) {
    if (plan.instKind[i] !== 'task' || plan.skipped[i]) continue;
    out[i] = durations[plan.tasks[plan.instTask[i]].id] ?? 1;
  }
  return out;
}

/**
 * Runs the plan on a virtual clock: unlimited workers, but one task at a time per node, at
 * most `concurrency[task]` nodes running a task at once, and everything the edges say.
 * Among ready tasks on a node, the orchestrator's rule picks (`ready-order.ts`).
 */
export function simulatePlan(plan: Plan, options: SimulationOptions = {}): SimulationResult {
  const n = plan.instTask.length;
  const duration = instanceDurations(plan, options.durations);
  const rank = readyTaskRank(
    { order: plan.order, preds: plan.preds, anyPreds: plan.anyPreds, node: plan.instNode, duration },
    options.readyOrder,
  );
  const position = new Int32Array(n);
  plan.order.forEach((v, k) => (position[v] = k));
  const compare = readyTaskComparator(rank, position);

  // Successors: plain edges, and any-of memberships (producer -> [consumer, group]).
  const succ: number[][] = Array.from({ length: n }, () => []);
  const anySucc = new Map<number, [number, number][]>();
  const waiting = new Int32Array(n);
  const groupDone = new Map<number, Uint8Array>();
  for (let i = 0; i < n; i++) {
    for (const p of plan.preds[i]) succ[p].push(i);
    waiting[i] = plan.preds[i].length;
    const groups = plan.anyPreds.get(i);
    if (!groups) continue;
    waiting[i] += groups.length;
    groupDone.set(i, new Uint8Array(groups.length));
    groups.forEach((g, gi) => {
      for (const p of g) anySucc.set(p, [...(anySucc.get(p) ?? []), [i, gi]]);
    });
  }

  const limitOf = new Int32Array(plan.tasks.length).fill(0);
  plan.tasks.forEach((t, k) => {
    limitOf[k] = plan.concurrency[t.id] ?? 0;
  });
  const runningOfTask = new Int32Array(plan.tasks.length);
  const nodeBusy = new Uint8Array(plan.nodeNames.length);
  const start = new Float64Array(n).fill(-1);
  const end = new Float64Array(n).fill(-1);
  const readyAt = new Float64Array(n);
  const cause = new Int32Array(n).fill(-1);
  const lastFinished = new Int32Array(n).fill(-1); // the predecessor whose end made i ready

  const better = (a: number, b: number): boolean => compare(a, b) < 0;
  const nodeQueues = plan.nodeNames.map(() => new MinHeap<number>(better));
  const events = new MinHeap<[number, number]>((a, b) => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]));
  const dirty = new Set<number>();
  const blockedOnTask = new Map<number, Set<number>>();
  let now = 0;

  const complete = (i: number, at: number): void => {
    end[i] = at;
    const release = (c: number): void => {
      lastFinished[c] = i;
      if (--waiting[c] === 0) becomeReady(c, at);
    };
    for (const c of succ[i]) release(c);
    for (const [c, gi] of anySucc.get(i) ?? []) {
      const done = groupDone.get(c) as Uint8Array;
      if (done[gi]) continue;
      done[gi] = 1;
      release(c);
    }
  };
  const becomeReady = (i: number, at: number): void => {
    readyAt[i] = at;
    cause[i] = lastFinished[i];
    if (duration[i] === 0) {
      start[i] = at;
      complete(i, at);
      return;
    }
    nodeQueues[plan.instNode[i]].push(i);
    dirty.add(plan.instNode[i]);
  };
  const dispatch = (node: number, trigger: number): void => {
    if (nodeBusy[node]) return;
    const queue = nodeQueues[node];
    const deferred: number[] = [];
    let chosen = -1;
    while (queue.size > 0) {
      const i = queue.pop() as number;
      const t = plan.instTask[i];
      if (limitOf[t] > 0 && runningOfTask[t] >= limitOf[t]) {
        deferred.push(i);
        const set = blockedOnTask.get(t) ?? new Set<number>();
        set.add(node);
        blockedOnTask.set(t, set);
        continue;
      }
      chosen = i;
      break;
    }
    for (const d of deferred) queue.push(d);
    if (chosen < 0) return;
    nodeBusy[node] = 1;
    runningOfTask[plan.instTask[chosen]]++;
    start[chosen] = now;
    if (now > readyAt[chosen] && trigger >= 0) cause[chosen] = trigger;
    events.push([now + duration[chosen], chosen]);
  };

  const sources: number[] = [];
  for (let i = 0; i < n; i++) if (waiting[i] === 0) sources.push(i);
  for (const i of sources) becomeReady(i, 0);
  for (const node of dirty) dispatch(node, -1);
  dirty.clear();
  while (events.size > 0) {
    const [at, i] = events.pop() as [number, number];
    now = at;
    nodeBusy[plan.instNode[i]] = 0;
    const t = plan.instTask[i];
    runningOfTask[t]--;
    dirty.add(plan.instNode[i]);
    const blocked = blockedOnTask.get(t);
    if (blocked) {
      for (const node of blocked) dirty.add(node);
      blockedOnTask.delete(t);
    }
    complete(i, at);
    for (const node of dirty) dispatch(node, i);
    dirty.clear();
  }

  let last = -1;
  for (let i = 0; i < n; i++) if (last < 0 || end[i] > end[last]) last = i;
  const critical: string[] = [];
  for (let v = last; v >= 0; v = cause[v]) if (duration[v] > 0) critical.push(instanceName(plan, v));
  critical.reverse();

  const timeline: SimulationEntry[] = [];
  for (const i of plan.order) {
    if (plan.instKind[i] !== 'task') continue;
    const entry: SimulationEntry = {
      task: taskName(plan, i),
      node: plan.nodeNames[plan.instNode[i]],
      start: start[i],
      end: end[i],
    };
    if (plan.skipped[i]) entry.skipped = true;
    timeline.push(entry);
  }
  timeline.sort((a, b) => a.start - b.start || a.end - b.end);
  return { makespan: last >= 0 ? end[last] : 0, timeline, critical_path: critical };
}
