import type { DeploymentQueued, DeploymentRequested, RunEvent, RunPhaseName } from '@granule/run-events';
import { nodesToLock } from './node-locks';
import type { ExecutablePlan } from './executable-plan';

/** Status of one instance in a run. */
export const enum S {
  Pending = 0,
  Dispatched = 1,
  Running = 2,
  Succeeded = 3,
  Failed = 4,
  Skipped = 5,
  DepFailed = 6,
  TimedOut = 7,
  /** Not part of this run (RetryFailed reruns a subset); counts as done. */
  NotInRun = 8,
}

export const STATUS_NAMES = [
  'pending',
  'dispatched',
  'running',
  'succeeded',
  'failed',
  'skipped',
  'dep_failed',
  'timed_out',
  'not_in_run',
] as const;
export type InstanceStatusName = (typeof STATUS_NAMES)[number];

export type RunPhase = 'new' | RunPhaseName;

const isDone = (s: number): boolean => s === S.Succeeded || s === S.Skipped || s === S.NotInRun;
const isBroken = (s: number): boolean => s === S.Failed || s === S.DepFailed || s === S.TimedOut;
export const isFinished = (s: number): boolean => isDone(s) || isBroken(s);

/**
 * A run's state: a fold over its events (`evolve`). Per-instance data lives in typed arrays
 * (plans reach a million instances), so `evolve` updates the state in place and returns it;
 * it does no I/O and reads no clock, so the same events always give the same state.
 */
export interface RunState {
  runId: string;
  phase: RunPhase;
  version: number;
  request?: DeploymentRequested['data'];
  planId?: string;
  stopReason?: { reason: string; detail: string; requestedBy?: string };
  /** When it was stopped (its `DeploymentStopped`); the resume window runs from it. */
  stoppedAt?: string;
  terminalReason?: string;
  /** The code of a DeploymentRefused (e.g. PLAN_UNKNOWN_GRAPH). */
  refusalCode?: string;
  /** What the run waits for while it is `queued` (ADR 0024). */
  queued?: DeploymentQueued['data'];
  /** The nodes the run locks while it goes (`nodesToLock` of its plan; none for a dry run). */
  lockedNodes?: string[];
  status: Uint8Array;
  attempt: Uint16Array;
  /** Predecessors (and any-of groups) not yet done, per instance. */
  waiting: Int32Array;
  anySatisfied: Map<number, Uint8Array>;
  anyBroken: Map<number, Uint16Array>;
  /** Executable instances whose predecessors are done and that are not dispatched yet. */
  ready: Set<number>;
  /** Instance currently dispatched or running on each node, or -1. */
  busy: Int32Array;
  busyNodes: number;
  runningOfTask: Map<string, number>;
  startedAt: Float64Array;
  dispatchedAt: Float64Array;
  failedNodes: Set<number>;
  failedNodeReason: Map<number, string>;
  exceededGroups: Set<number>;
  /** Instances not finished yet (pending, dispatched, running). */
  unfinished: number;
  plan?: ExecutablePlan;
}

export function initialRunState(runId: string): RunState {
  return {
    runId,
    phase: 'new',
    version: 0,
    status: new Uint8Array(0),
    attempt: new Uint16Array(0),
    waiting: new Int32Array(0),
    anySatisfied: new Map(),
    anyBroken: new Map(),
    ready: new Set(),
    busy: new Int32Array(0),
    busyNodes: 0,
    runningOfTask: new Map(),
    startedAt: new Float64Array(0),
    dispatchedAt: new Float64Array(0),
    failedNodes: new Set(),
    failedNodeReason: new Map(),
    exceededGroups: new Set(),
    unfinished: 0,
  };
}

function instanceOf(state: RunState, key: string): number {
  const i = state.plan?.index.get(key);
  if (i === undefined) throw new Error(`event names '${key}', which is not in the plan of run ${state.runId}`);
  return i;
}

/** Marks `i` done (succeeded, skipped) and makes ready whatever it unblocks; no-work instances complete in cascade. */
function complete(state: RunState, plan: ExecutablePlan, first: number, finalStatus: S): void {
  const stack: [number, S][] = [[first, finalStatus]];
  while (stack.length > 0) {
    const [i, status] = stack.pop() as [number, S];
    if (!isFinished(state.status[i])) state.unfinished--;
    state.status[i] = status;
    const unblock = (c: number): void => {
      if (--state.waiting[c] !== 0 || state.status[c] !== S.Pending) return;
      if (plan.noWork[c]) stack.push([c, plan.planSkipped[c] ? S.Skipped : S.Succeeded]);
      else state.ready.add(c);
    };
    for (const c of plan.succ[i]) unblock(c);
    for (const [c, gi] of plan.anySucc.get(i) ?? []) {
      const satisfied = state.anySatisfied.get(c) as Uint8Array;
      if (satisfied[gi]) continue;
      satisfied[gi] = 1;
      unblock(c);
    }
  }
}

/**
 * A group's "done on this node" marker (`G@node`). A failure on the node does not break it:
 * the group's fault tolerance decides (decide stops the run when it is exceeded), so the
 * group's end and everything after it still run on the other nodes.
 */
const isGroupMarker = (plan: ExecutablePlan, i: number): boolean => plan.node[i] >= 0 && plan.type[i] === 'group';

/** Marks `first` broken and every pending instance after it dep_failed, up to group markers, which complete. */
function breakFrom(state: RunState, plan: ExecutablePlan, first: number, status: S): void {
  if (isGroupMarker(plan, first)) {
    if (state.status[first] === S.Pending) complete(state, plan, first, S.Skipped);
    return;
  }
  const tolerated: number[] = [];
  const was = state.status[first];
  if (!isFinished(was)) state.unfinished--;
  state.status[first] = status;
  state.ready.delete(first);
  const stack = [first];
  const breakOne = (c: number): void => {
    if (state.status[c] !== S.Pending) return;
    if (isGroupMarker(plan, c)) {
      tolerated.push(c);
      return;
    }
    state.status[c] = S.DepFailed;
    state.unfinished--;
    state.ready.delete(c);
    stack.push(c);
  };
  while (stack.length > 0) {
    const i = stack.pop() as number;
    for (const c of plan.succ[i]) breakOne(c);
    for (const [c, gi] of plan.anySucc.get(i) ?? []) {
      const satisfied = state.anySatisfied.get(c) as Uint8Array;
      if (satisfied[gi]) continue;
      const broken = state.anyBroken.get(c) as Uint16Array;
      broken[gi]++;
      const group = (plan.anyPreds.get(c) as number[][])[gi];
      if (broken[gi] >= group.length) breakOne(c);
    }
  }
  for (const m of tolerated) if (state.status[m] === S.Pending) complete(state, plan, m, S.Skipped);
}

function freeNode(state: RunState, plan: ExecutablePlan, i: number): void {
  const n = plan.node[i];
  if (n >= 0 && state.busy[n] === i) {
    state.busy[n] = -1;
    state.busyNodes--;
  }
  const task = plan.task[i];
  const running = state.runningOfTask.get(task) ?? 0;
  if (running > 0) state.runningOfTask.set(task, running - 1);
}

function acceptPlan(state: RunState, plan: ExecutablePlan, only: string[] | undefined): void {
  const n = plan.size;
  state.plan = plan;
  state.status = new Uint8Array(n);
  state.attempt = new Uint16Array(n);
  state.waiting = new Int32Array(n);
  state.startedAt = new Float64Array(n);
  state.dispatchedAt = new Float64Array(n);
  state.busy = new Int32Array(plan.nodeNames.length).fill(-1);
  state.unfinished = n;
  for (let i = 0; i < n; i++) {
    state.waiting[i] = plan.preds[i].length;
    const groups = plan.anyPreds.get(i);
    if (groups) {
      state.waiting[i] += groups.length;
      state.anySatisfied.set(i, new Uint8Array(groups.length));
      state.anyBroken.set(i, new Uint16Array(groups.length));
    }
  }
  if (only) {
    // A retry reruns `only`; the other task instances succeeded before and count as done.
    const inRun = new Set(only.map((k) => instanceOf(state, k)));
    for (let i = 0; i < n; i++) {
      if (inRun.has(i) || plan.noWork[i]) continue;
      state.status[i] = S.NotInRun;
      state.unfinished--;
    }
    for (let i = 0; i < n; i++) {
      if (state.status[i] !== S.NotInRun) continue;
      for (const c of plan.succ[i]) state.waiting[c]--;
      for (const [c, gi] of plan.anySucc.get(i) ?? []) {
        const satisfied = state.anySatisfied.get(c) as Uint8Array;
        if (satisfied[gi]) continue;
        satisfied[gi] = 1;
        state.waiting[c]--;
      }
    }
  }
  state.phase = 'running';
  for (let i = 0; i < n; i++) {
    if (state.status[i] !== S.Pending || state.waiting[i] !== 0) continue;
    if (plan.noWork[i]) complete(state, plan, i, plan.planSkipped[i] ? S.Skipped : S.Succeeded);
    else state.ready.add(i);
  }
}

/**
 * Applies one event. Events before `PlanAccepted` need no plan; from `PlanAccepted` on, the
 * caller passes the plan the event names (the orchestrator loads it from the plan store).
 */
export function evolve(state: RunState, event: RunEvent, plan?: ExecutablePlan): RunState {
  state.version++;
  const p = state.plan;
  switch (event.type) {
    case 'DeploymentRequested':
      state.request = event.data;
      state.phase = 'requested';
      return state;
    case 'PlanAccepted':
      if (!plan)
        throw new Error(`PlanAccepted for run ${state.runId}: the plan ${event.data.planId} must be given to evolve`);
      state.planId = event.data.planId;
      state.queued = undefined;
      state.lockedNodes = state.request?.dryRun ? [] : nodesToLock(plan, event.data.only);
      acceptPlan(state, plan, event.data.only);
      return state;
    case 'DeploymentQueued':
      state.phase = 'queued';
      state.queued = event.data;
      return state;
    case 'DeploymentRefused':
      state.phase = 'refused';
      state.terminalReason = event.data.reason;
      state.refusalCode = event.data.code;
      return state;
    case 'TaskDispatched': {
      const i = instanceOf(state, event.data.key);
      const plan0 = p as ExecutablePlan;
      state.ready.delete(i);
      state.status[i] = S.Dispatched;
      state.attempt[i] = event.data.attempt;
      state.dispatchedAt[i] = Date.parse(event.data.at);
      const n = plan0.node[i];
      if (n >= 0 && state.busy[n] !== i) {
        if (state.busy[n] < 0) state.busyNodes++;
        state.busy[n] = i;
      }
      state.runningOfTask.set(plan0.task[i], (state.runningOfTask.get(plan0.task[i]) ?? 0) + 1);
      return state;
    }
    case 'TaskAttemptFailed':
      // A try of a running task: the task goes on (the agent runs it again).
      return state;
    case 'TaskStarted': {
      const i = instanceOf(state, event.data.key);
      if (state.status[i] === S.Dispatched) state.status[i] = S.Running;
      state.startedAt[i] = Date.parse(event.data.at);
      return state;
    }
    case 'TaskSucceeded':
    case 'TaskSkipped': {
      const plan0 = p as ExecutablePlan;
      const i = instanceOf(state, event.data.key);
      freeNode(state, plan0, i);
      complete(state, plan0, i, event.type === 'TaskSucceeded' ? S.Succeeded : S.Skipped);
      return state;
    }
    case 'TaskFailed':
    case 'TaskTimedOut': {
      const plan0 = p as ExecutablePlan;
      const i = instanceOf(state, event.data.key);
      freeNode(state, plan0, i);
      breakFrom(state, plan0, i, event.type === 'TaskFailed' ? S.Failed : S.TimedOut);
      return state;
    }
    case 'NodeFailed': {
      const plan0 = p as ExecutablePlan;
      const n = plan0.nodeIndex.get(event.data.node);
      if (n === undefined) return state;
      state.failedNodes.add(n);
      state.failedNodeReason.set(n, event.data.reason);
      for (const i of plan0.instancesOfNode[n])
        if (state.status[i] === S.Pending) breakFrom(state, plan0, i, S.DepFailed);
      return state;
    }
    case 'GroupToleranceExceeded': {
      const gi = (p as ExecutablePlan).groups.findIndex((g) => g.id === event.data.group);
      if (gi >= 0) state.exceededGroups.add(gi);
      return state;
    }
    case 'DeploymentStopRequested':
      state.phase = 'stopping';
      state.stopReason = {
        reason: event.data.reason,
        detail: event.data.detail,
        ...(event.data.requestedBy ? { requestedBy: event.data.requestedBy } : {}),
      };
      return state;
    case 'DeploymentResumed':
      state.phase = 'running';
      state.stopReason = undefined;
      state.queued = undefined;
      return state;
    case 'DeploymentSucceeded':
      state.phase = 'succeeded';
      return state;
    case 'DeploymentFailed':
      state.phase = 'failed';
      state.terminalReason = event.data.reason;
      return state;
    case 'DeploymentStopped':
      state.phase = 'stopped';
      state.stoppedAt = event.data.at;
      return state;
    case 'StrategyAccepted':
    case 'StrategyPhaseStarted':
    case 'StrategyPhaseFinished':
    case 'StrategyReported':
      // A strategy run's own events: `@granule/strategy-run` folds them; a deployment run has none.
      return state;
    case 'DeploymentExpired':
      state.phase = 'expired';
      state.terminalReason = `the ${event.data.command} command expired before an orchestrator took it (stored ${event.data.storedAt}, ${event.data.ttlSeconds} s to live): nothing ran`;
      return state;
  }
}

/** Folds events into a fresh state. `plan` is needed when the events include `PlanAccepted`. */
export function foldRun(runId: string, events: RunEvent[], plan?: ExecutablePlan): RunState {
  let state = initialRunState(runId);
  for (const e of events) state = evolve(state, e, plan);
  return state;
}

/** Status of every instance by key (for reports and tests). */
export function instanceStatuses(state: RunState): Map<string, InstanceStatusName> {
  const out = new Map<string, InstanceStatusName>();
  const plan = state.plan;
  if (!plan) return out;
  for (let i = 0; i < plan.size; i++) out.set(plan.keys[i], STATUS_NAMES[state.status[i]]);
  return out;
}
