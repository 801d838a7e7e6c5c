import type { StrategyPlan, StrategyReport } from '@granule/deployment-strategy';
import type { TaskCheckReport } from './check-report';

/**
 * Events of a deployment run (stream `run-<runId>`) and of a node (stream `node-<uid>`).
 * Facts, in the past tense. `schemaVersion` of every event here is 1.
 *
 * Instances are named by their key `task@node`, as in the plan.
 */

export type TaskOutcomeStatus = 'succeeded' | 'failed' | 'timed_out';

export interface DeploymentRequested {
  type: 'DeploymentRequested';
  data: {
    runId: string;
    envId?: string;
    graph: string;
    filters?: Record<string, unknown>;
    strategy?: { name?: string; inline?: Record<string, unknown> };
    /**
     * Inline inputs the CLI stored because they did not fit in its command (ADR 0029), by SHA-256:
     * kept, so that planning a restart interrupted can be asked for again. Inputs sent in the
     * command itself are not kept.
     */
    inputs?: { name: string; size: number };
    dryRun: boolean;
    noop: boolean;
    /**
     * A check run (ADR 0031): the agents change nothing and report per task whether it would
     * change something. It speaks for no environment and changes no node status.
     */
    check?: boolean;
    /** With `check`: the tasks report the difference they would make. */
    diff?: boolean;
    /** Who asked: the identity that signed the command, never a field the client fills in (`anonymous` on a NATS without auth). */
    requestedBy?: string;
    /** Set for RetryFailed: the run retried and the keys it reruns. */
    retryOf?: { runId: string; failedOnly: boolean };
    /** Set for a phase run of a strategy run: the parent run, group and phase. */
    childOf?: { runId: string; group: string; phase: 'prepare' | 'deploy' };
    /** A failed node does not stop the run (strategy phases judge nodes by success criteria). */
    tolerateNodeFailures?: boolean;
    /**
     * When a node the run needs is held by another run (ADR 0024): queue (`DeploymentQueued`)
     * until it is free, instead of being refused with `NODES_LOCKED`.
     */
    waitForLocks?: boolean;
  };
}

/** A strategy run's groups resolved against the nodes (a StrategyPlan), and the inputs its phase runs use. */
export interface StrategyAccepted {
  type: 'StrategyAccepted';
  data: {
    plan: StrategyPlan;
    /** Inline plan inputs (absent when the run plans an environment). */
    inline?: { graphs: Record<string, unknown[]>; nodes: unknown[]; cluster?: Record<string, unknown> };
    /** Inline plan inputs the CLI stored (ADR 0029), by SHA-256: the phase runs plan them from there. */
    inputs?: { name: string; size: number };
  };
}

/** A group phase started as its own run (`childRunId`) on `nodes`. */
export interface StrategyPhaseStarted {
  type: 'StrategyPhaseStarted';
  data: { group: string; phase: 'prepare' | 'deploy'; nodes: string[]; childRunId: string; graph: string };
}

/** A group phase ended; its nodes by outcome. */
export interface StrategyPhaseFinished {
  type: 'StrategyPhaseFinished';
  data: {
    group: string;
    phase: 'prepare' | 'deploy';
    childRunId: string;
    succeeded: string[];
    failed: string[];
    note?: string;
  };
}

/** The end-of-run strategy report: groups with stage and failures, nodes by status. */
export interface StrategyReported {
  type: 'StrategyReported';
  data: { outcome: 'success' | 'partial' | 'failed'; report: StrategyReport };
}

export interface PlanAccepted {
  type: 'PlanAccepted';
  data: {
    planId: string;
    /** sha256 of the stored plan document. */
    planHash: string;
    instances: number;
    /** Instances that do work on a host (not skipped, not on `sync`). */
    tasks: number;
    nodes: string[];
    /** Keys that run in this run (RetryFailed); absent = every instance of the plan. */
    only?: string[];
  };
}

export interface DeploymentRefused {
  type: 'DeploymentRefused';
  data: { code: string; reason: string; offlineCriticalNodes?: string[] };
}

export interface NodeFailed {
  type: 'NodeFailed';
  data: { node: string; reason: 'offline' | 'task_failed' | 'task_timed_out'; task?: string };
}

export interface TaskDispatched {
  type: 'TaskDispatched';
  data: { key: string; attempt: number; dispatchId: string; at: string };
}

export interface TaskStarted {
  type: 'TaskStarted';
  data: { key: string; attempt: number; at: string };
}

/**
 * One try of a task on its host failed and the agent runs it again (retries happen in the agent:
 * shell, puppet and sync tasks have `retries`). `attempt` is the dispatch, `try` the try on the
 * host (1-based) out of `of`; `reason` says how it failed (exit code, timeout, signal).
 */
export interface TaskAttemptFailed {
  type: 'TaskAttemptFailed';
  data: {
    key: string;
    attempt: number;
    try: number;
    of: number;
    exitCode: number | null;
    reason: string;
    timedOut?: boolean;
    durationMs?: number;
    at: string;
  };
}

export interface TaskSucceeded {
  type: 'TaskSucceeded';
  data: {
    key: string;
    attempt: number;
    exitCode: number | null;
    durationMs: number;
    outputTail: string;
    at: string;
    /** Tries made on the host (absent from agents that did not say: one). */
    tries?: number;
    /** Check runs: whether the task would change something (never `skipped`: that is a TaskSkipped). */
    check?: TaskCheckReport;
  };
}

export interface TaskFailed {
  type: 'TaskFailed';
  data: {
    key: string;
    attempt: number;
    exitCode: number | null;
    durationMs: number;
    outputTail: string;
    error?: string;
    at: string;
    /** Tries made on the host (absent from agents that did not say: one). */
    tries?: number;
  };
}

export interface TaskTimedOut {
  type: 'TaskTimedOut';
  data: { key: string; attempt: number; at: string; durationMs?: number; outputTail?: string; tries?: number };
}

/**
 * A task that failed with `fail_on_error: false` (`reason: fail_on_error`), or that a check run
 * did not run (`reason: check`: a shell task not marked check-safe, a reboot; `detail` says
 * which); it counts as skipped.
 */
export interface TaskSkipped {
  type: 'TaskSkipped';
  data: { key: string; reason: 'fail_on_error' | 'check'; at: string; detail?: string };
}

export interface GroupToleranceExceeded {
  type: 'GroupToleranceExceeded';
  data: { group: string; failed: string[]; tolerance: number };
}

export interface DeploymentStopRequested {
  type: 'DeploymentStopRequested';
  /** `requestedBy`: the authenticated operator who stopped it (reason `operator`, ADR 0025). */
  data: { reason: 'operator' | 'fault_tolerance' | 'critical_node'; detail: string; requestedBy?: string };
}

/** A node the run needs and the run that holds it (ADR 0024). */
export interface NodeHeld {
  node: string;
  runId: string;
}

/**
 * The run waits for nodes other runs hold (`granule deploy|retry|resume --wait`): it starts
 * (`PlanAccepted`) or goes on (`DeploymentResumed`) once they are free. `plan` is the plan it
 * waits to run (absent when it waits to resume: its `PlanAccepted` names the plan); recorded
 * again only when the holders change.
 */
export interface DeploymentQueued {
  type: 'DeploymentQueued';
  data: {
    heldBy: NodeHeld[];
    plan?: { planId: string; planHash: string; only?: string[] };
    resume?: boolean;
    /** A resume that waits: the operator who asked, recorded again with its `DeploymentResumed`. */
    requestedBy?: string;
    at: string;
  };
}

export interface DeploymentResumed {
  type: 'DeploymentResumed';
  /** `requestedBy`: the authenticated operator who resumed it (ADR 0025). */
  data: { at: string; requestedBy?: string };
}

export interface DeploymentSucceeded {
  type: 'DeploymentSucceeded';
  /** `outcome: partial` for a strategy run that succeeded with some groups or nodes failed. */
  data: { at: string; failedNodes: string[]; outcome?: 'success' | 'partial' };
}

export interface DeploymentFailed {
  type: 'DeploymentFailed';
  data: { at: string; reason: string; failedNodes: string[] };
}

export interface DeploymentStopped {
  type: 'DeploymentStopped';
  /** `beforeStart`: stopped while it waited for its plan or in the queue (ADR 0024): it touched nothing. */
  data: { at: string; failedNodes: string[]; beforeStart?: boolean };
}

/**
 * The command that asked for the run reached an orchestrator only after its time to live: it
 * was dropped, never run (whoever sent it was told nothing happened).
 */
export interface DeploymentExpired {
  type: 'DeploymentExpired';
  data: CommandExpiry;
}

/** When a command was stored on the command stream, how long it could wait, and when it was found expired. */
export interface CommandExpiry {
  commandId: string;
  command: string;
  storedAt: string;
  ttlSeconds: number;
  expiredAt: string;
}

/** A stop or resume found expired, on the stream `command-<commandId>` (the run it named is not touched). */
export interface CommandExpired {
  type: 'CommandExpired';
  data: CommandExpiry & { runId: string; requestedBy?: string };
}

export const commandStreamId = (commandId: string): string => `command-${commandId}`;

export type RunEvent =
  | DeploymentRequested
  | StrategyAccepted
  | StrategyPhaseStarted
  | StrategyPhaseFinished
  | StrategyReported
  | PlanAccepted
  | DeploymentRefused
  | NodeFailed
  | TaskDispatched
  | TaskStarted
  | TaskAttemptFailed
  | TaskSucceeded
  | TaskFailed
  | TaskTimedOut
  | TaskSkipped
  | GroupToleranceExceeded
  | DeploymentStopRequested
  | DeploymentQueued
  | DeploymentResumed
  | DeploymentSucceeded
  | DeploymentFailed
  | DeploymentStopped
  | DeploymentExpired;

export type RunEventType = RunEvent['type'];

/** Every run event type, once: keyed by the union, so a new type that is not listed here does not compile. */
const RUN_EVENT_TYPE_KEYS: Record<RunEventType, true> = {
  DeploymentRequested: true,
  StrategyAccepted: true,
  StrategyPhaseStarted: true,
  StrategyPhaseFinished: true,
  StrategyReported: true,
  PlanAccepted: true,
  DeploymentRefused: true,
  NodeFailed: true,
  TaskDispatched: true,
  TaskStarted: true,
  TaskAttemptFailed: true,
  TaskSucceeded: true,
  TaskFailed: true,
  TaskTimedOut: true,
  TaskSkipped: true,
  GroupToleranceExceeded: true,
  DeploymentStopRequested: true,
  DeploymentQueued: true,
  DeploymentResumed: true,
  DeploymentSucceeded: true,
  DeploymentFailed: true,
  DeploymentStopped: true,
  DeploymentExpired: true,
};

/** Every run event type (open-run queries list the non-terminal ones). */
export const RUN_EVENT_TYPES: readonly RunEventType[] = Object.keys(RUN_EVENT_TYPE_KEYS) as RunEventType[];

/** Terminal events: after one of them the run takes no command but RetryFailed (and Resume after DeploymentStopped). */
export const TERMINAL_RUN_EVENTS = [
  'DeploymentRefused',
  'DeploymentSucceeded',
  'DeploymentFailed',
  'DeploymentStopped',
  'DeploymentExpired',
] as const satisfies readonly RunEventType[];
export type TerminalRunEventType = (typeof TERMINAL_RUN_EVENTS)[number];

const TERMINAL_EVENT_SET: ReadonlySet<string> = new Set(TERMINAL_RUN_EVENTS);

/** True for an event type after which the run has ended. */
export function isTerminalRunEvent(type: string | undefined): type is TerminalRunEventType {
  return type !== undefined && TERMINAL_EVENT_SET.has(type);
}

/** The run event types a run can stop at and still be open. */
export const OPEN_RUN_EVENTS: readonly RunEventType[] = RUN_EVENT_TYPES.filter((t) => !isTerminalRunEvent(t));

export interface NodeRegistered {
  type: 'NodeRegistered';
  data: { uid: string; hostname: string; address: string; agentVersion: string; at: string };
}
export interface NodeWentOffline {
  type: 'NodeWentOffline';
  data: { uid: string; at: string };
}
export interface NodeCameOnline {
  type: 'NodeCameOnline';
  data: { uid: string; at: string };
}
export interface NodeStatusChanged {
  type: 'NodeStatusChanged';
  /** `from`: the status the same run gave the node before (absent on its first change). */
  data: { uid: string; from?: string; to: string; runId?: string; at: string };
}
/** (node stream) The node's agent refused a dispatch the orchestrator did not issue (defence in depth: NATS lets only the orchestrator publish dispatches). */
export interface DispatchRefused {
  type: 'DispatchRefused';
  data: { uid: string; runId?: string; dispatchId?: string; reason: string; at: string };
}
export type NodeEvent = NodeRegistered | NodeWentOffline | NodeCameOnline | NodeStatusChanged | DispatchRefused;

/**
 * (lock stream `lock-<uid>`) A run took the node: no other run may touch it until the same run
 * records `NodeReleased` (ADR 0024). Appended at the lock stream's version the run read, in the
 * transaction of the run's `PlanAccepted` or `DeploymentResumed`.
 */
export interface NodeLocked {
  type: 'NodeLocked';
  data: { uid: string; runId: string; at: string };
}
/** (lock stream) The run that held the node ended, stopped or failed; appended with its terminal event. */
export interface NodeReleased {
  type: 'NodeReleased';
  data: { uid: string; runId: string; at: string };
}
export type NodeLockEvent = NodeLocked | NodeReleased;

export const runStreamId = (runId: string): string => `run-${runId}`;
export const nodeStreamId = (uid: string): string => `node-${uid}`;
export const lockStreamId = (uid: string): string => `lock-${uid}`;
