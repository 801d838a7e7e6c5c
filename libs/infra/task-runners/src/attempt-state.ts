import { stat } from 'node:fs/promises';
import * as path from 'node:path';
import { systemClock, type Clock } from './clock';
import { OutputCollector } from './output-collector';
import { taskEnvironment } from './launch-plan';
import { currentBootId, nodeProcessSpawner, type ProcessSpawner, type SpawnedProcess } from './process-spawner';
import { note, type ProcessRunEnv } from './run-process';
import { SecretMasker } from './secret-masker';
import { TaskIoError, TaskRunnerError } from './task-runner.errors';
import {
  DEFAULT_KILL_GRACE_MS,
  DEFAULT_OUTPUT_CHUNK_BYTES,
  DEFAULT_OUTPUT_TAIL_BYTES,
  DEFAULT_REBOOT_COMMAND,
  DEFAULT_STATE_DIR_NAME,
  type OutputListener,
  type RunnerContext,
  type RunTaskOptions,
  type TaskExecution,
  type TaskOutcome,
} from './task-runner.types';

/** Everything one `runTask` call works with, defaults applied. */
export interface AttemptState extends ProcessRunEnv {
  exec: TaskExecution;
  rootDir: string;
  stateDir: string;
  allowedRoots: readonly string[];
  /** Environment every child process starts from. */
  baseEnv: Record<string, string>;
  rebootCommand: string;
  puppetBin: string;
  rsyncBin: string;
  startedAt: number;
}

export function createAttemptState(
  exec: TaskExecution,
  ctx: RunnerContext,
  onOutput?: OutputListener,
  signal?: AbortSignal,
  options: RunTaskOptions = {},
): AttemptState {
  const clock: Clock = ctx.clock ?? systemClock;
  const spawner: ProcessSpawner = ctx.spawner ?? nodeProcessSpawner;
  const rootDir = path.resolve(ctx.rootDir);
  const inherited = ctx.inheritedEnv ?? processEnv();
  return {
    exec,
    rootDir,
    stateDir: path.resolve(rootDir, ctx.stateDir ?? DEFAULT_STATE_DIR_NAME),
    allowedRoots: ctx.allowedRoots,
    baseEnv: taskEnvironment(inherited, ctx.env, {
      rootDir,
      runId: exec.runId,
      taskId: exec.taskId,
      nodeUid: exec.nodeUid,
    }),
    rebootCommand: ctx.rebootCommand ?? DEFAULT_REBOOT_COMMAND,
    puppetBin: ctx.puppetBin ?? 'puppet',
    rsyncBin: ctx.rsyncBin ?? 'rsync',
    clock,
    spawner,
    output: new OutputCollector(
      ctx.outputChunkBytes ?? DEFAULT_OUTPUT_CHUNK_BYTES,
      ctx.outputTailBytes ?? DEFAULT_OUTPUT_TAIL_BYTES,
      onOutput,
      exec.secrets?.length ? new SecretMasker(exec.secrets) : undefined,
    ),
    killGraceMs: ctx.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
    signal,
    onSpawn: options.onSpawn ? spawnReporter(exec, options.onSpawn) : undefined,
    onTryFailed: options.onTryFailed,
    startedAt: clock.now(),
  };
}

/** A copy of this process's environment (reading `process.env` goes through libc each time). */
export function processEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return env;
}

function spawnReporter(
  exec: TaskExecution,
  onSpawn: NonNullable<RunTaskOptions['onSpawn']>,
): (child: SpawnedProcess) => void {
  return (child) => {
    if (child.pid === undefined) return; // not started; the attempt fails with RUNNER_SPAWN_FAILED
    const bootId = currentBootId();
    try {
      onSpawn({
        pgid: child.pid,
        ...(child.startTime === undefined ? {} : { startTime: child.startTime }),
        ...(bootId === undefined ? {} : { bootId }),
        runId: exec.runId,
        taskId: exec.taskId,
      });
    } catch {
      // a listener's bug must not break the task
    }
  };
}

/** An outcome for work done in-process (file tasks, no-ops). */
export function finished(
  state: AttemptState,
  fields: Pick<TaskOutcome, 'status' | 'exitCode' | 'attempts'> & Partial<TaskOutcome>,
): TaskOutcome {
  state.output.flush();
  return { ...fields, durationMs: Math.round(state.clock.now() - state.startedAt), outputTail: state.output.tail() };
}

/** Turns an error into a failed outcome, after writing its message to the task's output. */
export function failedWith(state: AttemptState, err: unknown, attempts: number): TaskOutcome {
  const message = err instanceof Error ? err.message : String(err);
  const errorCode = err instanceof TaskRunnerError ? err.code : 'RUNNER_IO_FAILED';
  note(state, `[granule] ${message}\n`);
  return finished(state, { status: 'failed', exitCode: null, attempts, error: message, errorCode });
}

/** The outcome of a task stopped by its AbortSignal. */
export function cancelled(state: AttemptState, attempts: number): TaskOutcome {
  return finished(state, {
    status: 'failed',
    exitCode: null,
    attempts,
    error: 'cancelled',
    errorCode: 'RUNNER_CANCELLED',
  });
}

/** Resolves a task's `cwd` against the root dir and checks it is a directory. */
export async function workingDir(state: AttemptState, what: string, cwd: string | undefined): Promise<string> {
  const dir = path.resolve(state.rootDir, cwd ?? '.');
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory())
    throw new TaskIoError(`${what} cwd '${cwd ?? dir}' is not a directory (resolved to '${dir}')`);
  return dir;
}
