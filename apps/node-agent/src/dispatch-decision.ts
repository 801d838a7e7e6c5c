import { dispatchIdOf, type TaskDispatchMessage, type TaskProgressMessage } from '@granule/contracts';
import { textsAt } from '@granule/task-model';
import {
  journalKey,
  REBOOT_DEFAULTS,
  type LeftoverGroupState,
  type TaskExecution,
  type FailedTry,
  type TaskOutcome,
  type TaskProcessGroup,
} from '@granule/task-runners';

// Pure decisions of the agent: what to do with a dispatch given what this host remembers.

/** Error reported for a task the agent was running when it died. */
export const AGENT_RESTARTED_ERROR = 'agent restarted while the task was running; not run again';
export const AGENT_RESTARTED_CODE = 'AGENT_RESTARTED';
export const AGENT_STOPPED_ERROR = 'the agent was stopped (SIGTERM) while the task was running; the task was cancelled';
export const REBOOT_TIMEOUT_CODE = 'AGENT_REBOOT_TIMEOUT';
export const INVALID_DISPATCH_CODE = 'AGENT_INVALID_DISPATCH';

/**
 * A task this agent has started and not yet reported as finished, kept in the agent's state
 * file. `rebootDeadline` is set once a reboot command was issued.
 */
export interface TaskMarker {
  dispatchId: string;
  journalKey: string;
  runId: string;
  key: string;
  node: string;
  attempt: number;
  type: string;
  /** Reboot tasks: `parameters.timeout`, seconds to wait for the host to come back. */
  rebootTimeoutSec?: number;
  startedAt: string;
  /**
   * Reply subject of the JetStream delivery being handled. A restarted agent acknowledges the
   * interrupted delivery with it, so the node's consumer (one unacknowledged message at a time)
   * is free at once instead of after the 60 s ack wait.
   */
  ackSubject?: string;
  /** ISO time after which a reboot that has not come back counts as failed. */
  rebootDeadline?: string;
  /** Output of the reboot command, reported once the host is back. */
  rebootOutputTail?: string;
  /**
   * The process group of the task's current attempt, recorded (fsync) right after it started, so
   * a restarted agent can stop what the task left running (see `leftoverGroupOf`).
   */
  process?: TaskProcessGroup;
}

/** What the agent remembers about one dispatch. */
export interface DispatchMemory {
  /** Outcome recorded in the task journal. */
  journaled?: TaskOutcome;
  /** The agent's running-task marker, when it is this dispatch's. */
  running?: TaskMarker;
  /** A reboot of this dispatch waiting for the host to come back. */
  pendingReboot?: TaskMarker;
}

export type DispatchDecision =
  | { action: 'replay'; outcome: TaskOutcome }
  | { action: 'fail_restarted' }
  | { action: 'await_reboot' }
  | { action: 'run' };

/**
 * Decides what a dispatch needs: answered from the journal when it finished before (never run
 * twice); failed when the agent died while running it; left alone while its reboot is pending;
 * otherwise run.
 */
export function decideDispatch(memory: DispatchMemory): DispatchDecision {
  if (memory.journaled) return { action: 'replay', outcome: memory.journaled };
  if (memory.running) return { action: 'fail_restarted' };
  if (memory.pendingReboot) return { action: 'await_reboot' };
  return { action: 'run' };
}

export type DispatchCheck =
  { ok: true; dispatch: TaskDispatchMessage } | { ok: false; problems: string[]; replyTo?: ProgressTarget };

/** Where a progress message goes: enough of a dispatch to report on it (and, from a marker, when the task started). */
export type ProgressTarget = Pick<TaskDispatchMessage, 'runId' | 'key' | 'node' | 'attempt' | 'dispatchId'> & {
  startedAt?: string;
};

const isText = (v: unknown): v is string => typeof v === 'string' && v !== '';

/**
 * Checks that a decoded message is a dispatch for node `nodeUid` whose ids agree
 * (`key` = `task@node`, `dispatchId` = `run/key/attempt`), listing every problem. When it can
 * still be answered (`replyTo`), the agent reports it failed; otherwise it drops it.
 */
export function checkDispatch(value: unknown, nodeUid: string): DispatchCheck {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { ok: false, problems: ['the message is not a JSON object'] };
  const d = value as Record<string, unknown>;
  const problems: string[] = [];
  for (const field of ['runId', 'key', 'task', 'node', 'type', 'dispatchId'] as const) {
    if (!isText(d[field])) problems.push(`${field} must be a non-empty string`);
  }
  if (!Number.isInteger(d.attempt) || (d.attempt as number) < 1) problems.push('attempt must be a whole number >= 1');
  if (typeof d.parameters !== 'object' || d.parameters === null || Array.isArray(d.parameters))
    problems.push('parameters must be an object');
  if (d.noop !== undefined && typeof d.noop !== 'boolean') problems.push('noop must be true or false');
  if (d.check !== undefined && typeof d.check !== 'boolean') problems.push('check must be true or false');
  if (d.diff !== undefined && typeof d.diff !== 'boolean') problems.push('diff must be true or false');
  const isPath = (p: unknown): boolean =>
    Array.isArray(p) && p.every((s) => typeof s === 'string' || (Number.isInteger(s) && (s as number) >= 0));
  if (d.secretPaths !== undefined && !(Array.isArray(d.secretPaths) && d.secretPaths.every(isPath)))
    problems.push('secretPaths must be a list of key paths');
  if (isText(d.node) && d.node !== nodeUid)
    problems.push(`the dispatch is for node '${d.node}', this agent is '${nodeUid}'`);
  if (isText(d.task) && isText(d.node) && isText(d.key) && d.key !== `${d.task}@${d.node}`)
    problems.push(`key '${d.key}' is not task@node ('${d.task}@${d.node}')`);
  if (isText(d.runId) && isText(d.key) && Number.isInteger(d.attempt) && isText(d.dispatchId)) {
    const expected = dispatchIdOf(d.runId, d.key, d.attempt as number);
    if (d.dispatchId !== expected) problems.push(`dispatchId '${d.dispatchId}' is not run/key/attempt ('${expected}')`);
  }
  if (problems.length === 0)
    return {
      ok: true,
      // A check dispatch changes nothing whatever its noop says (ADR 0031).
      dispatch: { ...(d as unknown as TaskDispatchMessage), noop: d.noop === true || d.check === true },
    };
  const canReply = isText(d.runId) && isText(d.key) && isText(d.dispatchId);
  const replyTo = canReply
    ? {
        runId: d.runId as string,
        key: d.key as string,
        node: isText(d.node) ? d.node : nodeUid,
        attempt: Number.isInteger(d.attempt) ? (d.attempt as number) : 0,
        dispatchId: d.dispatchId as string,
      }
    : undefined;
  return { ok: false, problems, replyTo };
}

/** The task-runners execution of a dispatch; the values at its secret paths are masked in the output. */
export function executionOf(d: TaskDispatchMessage): TaskExecution {
  const exec: TaskExecution = {
    runId: d.runId,
    taskId: d.task,
    nodeUid: d.node,
    type: d.type,
    parameters: d.parameters,
    attempt: d.attempt,
    noop: d.noop || d.check === true,
  };
  if (d.check) {
    exec.check = true;
    if (d.diff) exec.diff = true;
  }
  if (d.secretPaths?.length) exec.secrets = textsAt(d.parameters, d.secretPaths);
  return exec;
}

/**
 * The journal key of a dispatch: task-runners' `journalKey` of (run, task, node, attempt),
 * which is one-to-one with `dispatchId` = `run/task@node/attempt` once `checkDispatch` passed.
 */
export function journalKeyOf(d: Pick<TaskDispatchMessage, 'runId' | 'task' | 'node' | 'attempt'>): string {
  return journalKey({ runId: d.runId, taskId: d.task, nodeUid: d.node, attempt: d.attempt });
}

/** The running-task marker written before a dispatch starts. */
export function markerOf(d: TaskDispatchMessage, now: Date, ackSubject?: string): TaskMarker {
  const marker: TaskMarker = {
    dispatchId: d.dispatchId,
    journalKey: journalKeyOf(d),
    runId: d.runId,
    key: d.key,
    node: d.node,
    attempt: d.attempt,
    type: d.type,
    startedAt: now.toISOString(),
  };
  if (ackSubject !== undefined) marker.ackSubject = ackSubject;
  if (d.type === 'reboot') marker.rebootTimeoutSec = rebootTimeoutOf(d.parameters);
  return marker;
}

function rebootTimeoutOf(parameters: Record<string, unknown>): number {
  const t = parameters.timeout;
  return typeof t === 'number' && t > 0 ? t : REBOOT_DEFAULTS.timeout;
}

/** The marker of a reboot whose command was issued: the host must be back by the deadline. */
export function pendingRebootOf(marker: TaskMarker, outcome: TaskOutcome, now: Date): TaskMarker {
  const timeoutSec = outcome.rebootTimeoutSec ?? marker.rebootTimeoutSec ?? REBOOT_DEFAULTS.timeout;
  return {
    ...marker,
    rebootTimeoutSec: timeoutSec,
    rebootDeadline: new Date(now.getTime() + timeoutSec * 1000).toISOString(),
    rebootOutputTail: outcome.outputTail,
  };
}

/**
 * The error of a task the agent was running when it died, saying what became of the processes
 * it left (`leftover`, from `stopLeftoverGroup`): only a group that was stopped, or that could
 * not be, is mentioned.
 */
export function restartedError(leftover?: LeftoverGroupState, pgid?: number): string {
  if (leftover === 'stopped') return `${AGENT_RESTARTED_ERROR} (its leftover processes were stopped)`;
  if (leftover === 'survived')
    return `${AGENT_RESTARTED_ERROR} (its leftover processes could not be stopped: process group ${pgid ?? '?'} still runs)`;
  return AGENT_RESTARTED_ERROR;
}

/** Outcome of a task the agent was running when it died; `leftover` as in `restartedError`. */
export function restartedOutcome(marker: TaskMarker, now: Date, leftover?: LeftoverGroupState): TaskOutcome {
  return {
    status: 'failed',
    exitCode: null,
    durationMs: Math.max(0, now.getTime() - Date.parse(marker.startedAt)),
    outputTail: '',
    attempts: 1,
    error: restartedError(leftover, marker.process?.pgid),
    errorCode: AGENT_RESTARTED_CODE,
  };
}

/**
 * The process group a restarted agent must stop before reporting `marker`'s task: the one
 * recorded for an interrupted task that is not journaled (a finished task's background children
 * are left alone) and is not a reboot (its command may still be taking the host down).
 */
export function leftoverGroupOf(
  marker: TaskMarker | undefined,
  journaled: (key: string) => TaskOutcome | undefined,
): TaskProcessGroup | undefined {
  if (!marker?.process || marker.type === 'reboot' || journaled(marker.journalKey)) return undefined;
  return marker.process;
}

/**
 * Outcome of a pending reboot when the agent starts again (`cameBack`) or its deadline passes
 * with the agent still up: succeeded when the agent is back in time, failed otherwise.
 */
export function rebootOutcome(marker: TaskMarker, now: Date, cameBack: boolean): TaskOutcome {
  const durationMs = Math.max(0, now.getTime() - Date.parse(marker.startedAt));
  const timeout = marker.rebootTimeoutSec ?? REBOOT_DEFAULTS.timeout;
  // Died while the reboot command ran (no deadline yet): count from the start.
  const deadline = marker.rebootDeadline
    ? Date.parse(marker.rebootDeadline)
    : Date.parse(marker.startedAt) + timeout * 1000;
  if (cameBack && now.getTime() <= deadline) {
    return { status: 'succeeded', exitCode: 0, durationMs, outputTail: marker.rebootOutputTail ?? '', attempts: 1 };
  }
  return {
    status: 'failed',
    exitCode: null,
    durationMs,
    outputTail: marker.rebootOutputTail ?? '',
    attempts: 1,
    error: cameBack
      ? `the host came back after the reboot timeout (${timeout} s)`
      : `the host did not reboot within the reboot timeout (${timeout} s)`,
    errorCode: REBOOT_TIMEOUT_CODE,
  };
}

/**
 * Outcome of a task a previous agent process left unfinished: a reboot means the host came
 * back (`rebootOutcome`), anything else was interrupted (`restartedOutcome`, with `leftover`).
 */
export function interruptedOutcome(marker: TaskMarker, now: Date, leftover?: LeftoverGroupState): TaskOutcome {
  return marker.type === 'reboot' ? rebootOutcome(marker, now, true) : restartedOutcome(marker, now, leftover);
}

/** What the agent reports, at start, for a task the previous agent process left unfinished. */
export interface RecoveryStep {
  marker: TaskMarker;
  outcome: TaskOutcome;
  /** The outcome is in the journal already (the process died before reporting it). */
  journaled: boolean;
}

/**
 * Decides, at start, what to report for the running marker and the pending reboots the previous
 * agent process left: a journaled outcome as it was (it may not have been published); a reboot
 * → the host came back (succeeded, or failed past its deadline); any other running task →
 * failed as interrupted, never run again (`leftover`: what became of the processes the running
 * task left, see `leftoverGroupOf`).
 */
export function recoverOnStart(
  running: TaskMarker | undefined,
  pendingReboots: readonly TaskMarker[],
  journaled: (key: string) => TaskOutcome | undefined,
  now: Date,
  leftover?: LeftoverGroupState,
): RecoveryStep[] {
  return [...(running ? [running] : []), ...pendingReboots].map((marker) => {
    const outcome = journaled(marker.journalKey);
    if (outcome) return { marker, outcome, journaled: true };
    return {
      marker,
      outcome: interruptedOutcome(marker, now, marker === running ? leftover : undefined),
      journaled: false,
    };
  });
}

/** Which task instance, dispatch and attempt a progress message is about. */
function aboutTask(t: ProgressTarget): Pick<TaskProgressMessage, 'runId' | 'key' | 'node' | 'attempt' | 'dispatchId'> {
  return { runId: t.runId, key: t.key, node: t.node, attempt: t.attempt, dispatchId: t.dispatchId };
}

/** The progress message of a finished task. */
export function finishedMessage(
  target: ProgressTarget,
  outcome: TaskOutcome,
  now: Date,
  fromJournal = false,
): TaskProgressMessage {
  const message: TaskProgressMessage = {
    ...aboutTask(target),
    status: outcome.status,
    at: now.toISOString(),
    exitCode: outcome.exitCode,
    durationMs: outcome.durationMs,
    outputTail: outcome.outputTail,
  };
  if (outcome.error !== undefined) message.error = outcome.error;
  if (outcome.attempts > 0) message.try = outcome.attempts;
  if (outcome.check !== undefined) message.check = outcome.check;
  if (fromJournal) message.fromJournal = true;
  if (target.startedAt !== undefined) message.startedAt = target.startedAt;
  return message;
}

/** The `started` progress message of a running task, stamped with when its marker says it began. */
export function startedMessage(marker: TaskMarker): TaskProgressMessage {
  return {
    ...aboutTask(marker),
    status: 'started',
    at: marker.startedAt,
  };
}

/** The `attempt_failed` progress message of a try the runner runs again. */
export function attemptFailedMessage(marker: TaskMarker, failed: FailedTry, now: Date): TaskProgressMessage {
  return {
    ...aboutTask(marker),
    status: 'attempt_failed',
    at: now.toISOString(),
    startedAt: marker.startedAt,
    try: failed.try,
    tries: failed.tries,
    exitCode: failed.exitCode,
    error: failed.error,
    durationMs: failed.durationMs,
    ...(failed.timedOut ? { timedOut: true } : {}),
  };
}

/** Outcome reported for a dispatch the agent cannot use. */
export function invalidDispatchOutcome(problems: string[]): TaskOutcome {
  return {
    status: 'failed',
    exitCode: null,
    durationMs: 0,
    outputTail: '',
    attempts: 0,
    error: `invalid dispatch: ${problems.join('; ')}`,
    errorCode: INVALID_DISPATCH_CODE,
  };
}

/**
 * JetStream message ids of the agent's progress messages. A repeat within RESULTS' duplicate
 * window is dropped, so `started` and the first `done` are stored once however often they are
 * sent; an answer from the journal gets its own id per delivered dispatch message (stream
 * sequence), so a redelivery is answered visibly but only once.
 */
export const progressMsgIds = {
  started: (dispatchId: string): string => `${dispatchId}/started`,
  done: (dispatchId: string): string => `${dispatchId}/done`,
  replay: (dispatchId: string, dispatchSeq: number): string => `${dispatchId}/done/replay-${dispatchSeq}`,
  tryFailed: (dispatchId: string, n: number): string => `${dispatchId}/try-${n}/failed`,
};
