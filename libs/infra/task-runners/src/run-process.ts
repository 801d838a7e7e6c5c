import { sleep, type Clock } from './clock';
import type { OutputCollector } from './output-collector';
import { planLaunch, type LaunchLimits, type LaunchPlan, type ProcessSpec, type StopPlan } from './launch-plan';
import type { ProcessSpawner, SpawnedProcess } from './process-spawner';
import type { FailedTry, TaskOutcome } from './task-runner.types';

/** What a process run needs from the context it runs in. */
export interface ProcessRunEnv {
  clock: Clock;
  spawner: ProcessSpawner;
  output: OutputCollector;
  killGraceMs: number;
  signal?: AbortSignal;
  /** Told of each started process (once per attempt), before its output is read. */
  onSpawn?: (child: SpawnedProcess) => void;
  /** Told of a try that failed and will be run again. */
  onTryFailed?: (failed: FailedTry) => void;
}

export interface ProcessRunResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  cancelled: boolean;
  spawnError?: Error;
}

const GROUP_POLL_MS = 50;

/**
 * Runs one process as `plan` says. On timeout or abort the whole group is stopped as
 * `plan.stop` says, and the call returns only once the group is gone (or the kill was sent and
 * the kernel was given `afterKillWaitMs` to reap it).
 */
export async function runProcess(plan: LaunchPlan, env: ProcessRunEnv): Promise<ProcessRunResult> {
  if (env.signal?.aborted) return { exitCode: null, signal: null, timedOut: false, cancelled: true };
  const child = await env.spawner.spawn(plan, (stream, data) => env.output.write(stream, data));
  env.onSpawn?.(child);
  const { stop } = plan;
  let timedOut = false;
  let cancelled = false;
  let terminatedAt: number | null = null;
  let cancelKill: (() => void) | undefined;
  const terminate = (): void => {
    if (terminatedAt !== null) return;
    terminatedAt = env.clock.now();
    child.signalGroup(stop.termSignal);
    cancelKill = env.clock.setTimer(stop.graceMs, () => child.signalGroup(stop.killSignal));
  };
  const cancelTimeout =
    stop.timeoutMs === null
      ? undefined
      : env.clock.setTimer(stop.timeoutMs, () => {
          timedOut = true;
          terminate();
        });
  const onAbort = (): void => {
    cancelled = true;
    terminate();
  };
  env.signal?.addEventListener('abort', onAbort, { once: true });
  // Aborted while the process was being started: the listener came too late to hear it.
  if (env.signal?.aborted) onAbort();
  try {
    const exit = await child.exited;
    cancelTimeout?.();
    env.signal?.removeEventListener('abort', onAbort);
    if (terminatedAt !== null) await waitForGroupGone(child, terminatedAt, stop, env.clock);
    env.output.flush();
    return { exitCode: exit.exitCode, signal: exit.signal, timedOut, cancelled, spawnError: exit.spawnError };
  } finally {
    cancelTimeout?.();
    cancelKill?.();
    env.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * Waits until no process of the group runs, sending `stop.killSignal` once `stop.graceMs` passed
 * since `since` (when `stop.termSignal` was sent), and gives up `stop.afterKillWaitMs` after that.
 * The leader can be gone while children that ignore SIGTERM live on: the kill is sent for them too.
 */
export async function waitForGroupGone(
  child: Pick<SpawnedProcess, 'groupAlive' | 'signalGroup'>,
  since: number,
  stop: Pick<StopPlan, 'killSignal' | 'graceMs' | 'afterKillWaitMs'>,
  clock: Clock,
): Promise<void> {
  let killed = false;
  while (child.groupAlive()) {
    const elapsed = clock.now() - since;
    if (!killed && elapsed >= stop.graceMs) {
      child.signalGroup(stop.killSignal);
      killed = true;
    }
    if (elapsed >= stop.graceMs + stop.afterKillWaitMs) return;
    await sleep(clock, GROUP_POLL_MS);
  }
}

/** How one process-backed task is run and judged. */
export interface AttemptPolicy {
  /** Name used in messages, e.g. `shell command`, `puppet apply`. */
  label: string;
  timeoutSec: number;
  retries: number;
  intervalSec: number;
  isSuccess(exitCode: number): boolean;
  /** Explains a failing exit code; default `exit code N`. */
  describeExit?(exitCode: number): string;
}

/**
 * Runs `spec` up to `retries + 1` times, waiting `intervalSec` between attempts. A timed-out
 * attempt is retried like a failed one; the outcome is the last attempt's. Cancellation stops at
 * once; a process that cannot be started is not retried.
 */
export async function runWithRetries(
  spec: ProcessSpec,
  policy: AttemptPolicy,
  env: ProcessRunEnv,
  startedAt: number,
): Promise<TaskOutcome> {
  const total = policy.retries + 1;
  const timeoutMs = policy.timeoutSec > 0 ? policy.timeoutSec * 1000 : null;
  const done = (
    attempts: number,
    fields: Omit<TaskOutcome, 'durationMs' | 'outputTail' | 'attempts'>,
  ): TaskOutcome => ({
    ...fields,
    attempts,
    durationMs: Math.round(env.clock.now() - startedAt),
    outputTail: env.output.tail(),
  });
  const cancelledOutcome = (attempts: number): TaskOutcome =>
    done(attempts, { status: 'failed', exitCode: null, error: 'cancelled', errorCode: 'RUNNER_CANCELLED' });

  let last: TaskOutcome = cancelledOutcome(0); // replaced by the first attempt
  let tryStartedAt = env.clock.now();
  for (let attempt = 1; attempt <= total; attempt++) {
    if (attempt > 1) {
      note(
        env,
        `[granule] attempt ${attempt - 1} of ${total} ${last.status === 'timed_out' ? 'timed out' : `failed (${last.error})`}; retrying in ${policy.intervalSec}s\n`,
      );
      env.output.flush();
      try {
        env.onTryFailed?.({
          try: attempt - 1,
          tries: total,
          exitCode: last.exitCode,
          timedOut: last.status === 'timed_out',
          error: last.error ?? last.status,
          durationMs: Math.round(env.clock.now() - tryStartedAt),
        });
      } catch {
        // a listener's bug must not break the task
      }
      if (!(await sleep(env.clock, policy.intervalSec * 1000, env.signal))) return cancelledOutcome(attempt - 1);
      env.output.startTry(attempt);
      tryStartedAt = env.clock.now();
    }
    const r = await runAttempt(spec, { timeoutMs, killGraceMs: env.killGraceMs }, env);
    const signal = r.signal ?? undefined;
    if (r.cancelled) return { ...cancelledOutcome(attempt), ...(signal ? { signal } : {}) };
    if (r.spawnError) {
      return done(attempt, {
        status: 'failed',
        exitCode: null,
        error: `cannot start ${policy.label}: ${r.spawnError.message}`,
        errorCode: 'RUNNER_SPAWN_FAILED',
      });
    }
    if (r.timedOut) {
      const error = `${policy.label} timed out after ${policy.timeoutSec}s; its process group was killed`;
      note(env, `[granule] ${error}\n`);
      last = done(attempt, {
        status: 'timed_out',
        exitCode: null,
        ...(signal ? { signal } : {}),
        error,
        errorCode: 'RUNNER_TIMED_OUT',
      });
      continue;
    }
    if (r.exitCode !== null && policy.isSuccess(r.exitCode))
      return done(attempt, { status: 'succeeded', exitCode: r.exitCode });
    const error =
      r.exitCode === null
        ? `${policy.label} was killed by ${r.signal ?? 'a signal'}`
        : `${policy.label} failed: ${policy.describeExit?.(r.exitCode) ?? `exit code ${r.exitCode}`}`;
    last = done(attempt, {
      status: 'failed',
      exitCode: r.exitCode,
      ...(signal ? { signal } : {}),
      error,
      errorCode: 'RUNNER_EXIT_FAILED',
    });
  }
  return last;
}

/** One attempt: a request that cannot be planned fails like a process that cannot be started. */
function runAttempt(spec: ProcessSpec, limits: LaunchLimits, env: ProcessRunEnv): Promise<ProcessRunResult> {
  let plan: LaunchPlan;
  try {
    plan = planLaunch(spec, limits);
  } catch (err) {
    const spawnError = err instanceof Error ? err : new Error(String(err));
    return Promise.resolve({ exitCode: null, signal: null, timedOut: false, cancelled: false, spawnError });
  }
  return runProcess(plan, env);
}

/** Writes a runner message into the task's output (stderr), so operators see it in the log. */
export function note(env: { output: OutputCollector }, text: string): void {
  env.output.write('stderr', text);
}
