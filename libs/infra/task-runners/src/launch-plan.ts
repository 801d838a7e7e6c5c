import { GranuleError } from '@granule/core';

/**
 * How a task process is started and stopped, said once (ADR 0009). `planLaunch` turns a runner's
 * request into a `LaunchPlan`; the native helper (`granule-spawn`, which receives the plan as it
 * is) and Node.js's `child_process` (`nodeProcessSpawner`) only execute it. Pure: no I/O.
 */

/** What a runner asks to run: no shell is involved unless `command` is one. */
export interface ProcessSpec {
  command: string;
  args: string[];
  cwd: string;
  /** The whole environment of the process (`taskEnvironment` plus what the runner adds). */
  env: Record<string, string>;
}

/** The limits of one attempt. */
export interface LaunchLimits {
  /** Null: no time limit. */
  timeoutMs: number | null;
  /** Time between `termSignal` and `killSignal`. */
  killGraceMs: number;
}

/**
 * How long output is still read after the leader exited. A background child that inherited the
 * pipes would otherwise keep the task open until it ends; after this it is left running and its
 * further output is dropped.
 */
export const OUTPUT_DRAIN_MS = 1000;

/** After `killSignal`, how long the kernel gets to remove the group before the wait gives up. */
export const AFTER_KILL_WAIT_MS = 2000;

/** How a task's process group is stopped: on timeout, on cancel, and when found left over after a crash. */
export interface StopPlan {
  /** Null: the attempt has no time limit. */
  timeoutMs: number | null;
  /** Sent first, to every process of the group. */
  termSignal: 'SIGTERM';
  /** Sent to what still runs of the group `graceMs` after `termSignal` (at once when 0). */
  killSignal: 'SIGKILL';
  graceMs: number;
  afterKillWaitMs: number;
}

/**
 * A task process as it is to be started. Besides what the fields say, every executor gives it
 * stdin from /dev/null, stdout and stderr as pipes to the agent, no other descriptor, default
 * signal dispositions and an empty signal mask, and the agent's user and umask.
 */
export interface LaunchPlan {
  /** The program. A name without `/` is looked up on the PATH of `env`, not the agent's. */
  file: string;
  /** Arguments, `argv[0]` included. */
  argv: readonly string[];
  cwd: string;
  /** The whole environment: nothing of the agent's or the helper's is added. */
  env: Readonly<Record<string, string>>;
  /**
   * The process starts a new session (setsid), so it leads its own process group (pgid = pid):
   * the group every signal, liveness check and leftover cleanup addresses.
   */
  newSession: boolean;
  /** See `OUTPUT_DRAIN_MS`. */
  drainMs: number;
  stop: StopPlan;
}

/** The environment names that tie a process group to its task; `stopLeftoverGroup` reads them back from /proc. */
export const TASK_IDENTITY_ENV = { runId: 'GRANULE_RUN_ID', taskId: 'GRANULE_TASK_ID' } as const;

/** Who a task process runs for. */
export interface TaskIdentity {
  rootDir: string;
  runId: string;
  taskId: string;
  nodeUid: string;
}

/**
 * The environment every process of a task starts from: the agent's, the configured additions,
 * then where and for whom it runs. Runners add their own (a task's `env`, puppet's `HOME`) on top.
 */
export function taskEnvironment(
  inherited: Readonly<Record<string, string>>,
  configured: Readonly<Record<string, string>> | undefined,
  task: TaskIdentity,
): Record<string, string> {
  return {
    ...inherited,
    ...configured,
    GRANULE_ROOT: task.rootDir,
    [TASK_IDENTITY_ENV.runId]: task.runId,
    [TASK_IDENTITY_ENV.taskId]: task.taskId,
    GRANULE_NODE_UID: task.nodeUid,
  };
}

/**
 * A process that could not be started. `code` is the errno name (`ENOENT`, `EACCES`, ...), or
 * `ERR_INVALID_ARG_VALUE` for a request no executor can pass to the kernel.
 */
export class ProcessStartError extends GranuleError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** A start failure worded as Node.js words it: `spawn <file> <code>`. */
export function startFailure(file: string, code: string, cause?: unknown): ProcessStartError {
  return new ProcessStartError(code, `spawn ${file} ${code}`, cause === undefined ? undefined : { cause });
}

/** How the group is stopped, for a group found left over (no time limit). */
export function stopPlan(killGraceMs: number, timeoutMs: number | null = null): StopPlan {
  return {
    timeoutMs,
    termSignal: 'SIGTERM',
    killSignal: 'SIGKILL',
    graceMs: killGraceMs,
    afterKillWaitMs: AFTER_KILL_WAIT_MS,
  };
}

/**
 * The plan for `spec`: its own process group and session, exactly its environment, the standard
 * drain time and the stop rules of `limits`. Throws `ProcessStartError` (`ERR_INVALID_ARG_VALUE`)
 * for what cannot reach exec: an empty command, or a NUL byte in any string.
 */
export function planLaunch(spec: ProcessSpec, limits: LaunchLimits): LaunchPlan {
  if (spec.command === '') throw new ProcessStartError('ERR_INVALID_ARG_VALUE', 'spawn: the command is empty');
  const strings = [spec.command, spec.cwd, ...spec.args, ...Object.entries(spec.env).flat()];
  if (strings.some((s) => s.includes('\0')))
    throw new ProcessStartError(
      'ERR_INVALID_ARG_VALUE',
      `spawn ${spec.command.replaceAll('\0', '\\0')}: a command, argument, directory or environment entry contains a NUL byte`,
    );
  return {
    file: spec.command,
    argv: [spec.command, ...spec.args],
    cwd: spec.cwd,
    env: spec.env,
    newSession: true,
    drainMs: OUTPUT_DRAIN_MS,
    stop: stopPlan(limits.killGraceMs, limits.timeoutMs),
  };
}
