import { runCopyFilesTask } from './copy-files.runner';
import { runPuppetTask } from './puppet.runner';
import { runRebootTask } from './reboot.runner';
import { cancelled, createAttemptState, failedWith, finished, processEnv, type AttemptState } from './attempt-state';
import { runShellTask } from './shell.runner';
import { runSyncTask } from './sync.runner';
import { UnknownTaskTypeError } from './task-runner.errors';
import type { OutputListener, RunnerContext, RunTaskOptions, TaskExecution, TaskOutcome } from './task-runner.types';
import { runUploadFileTask } from './upload-file.runner';

const RUNNERS: Record<string, (state: AttemptState) => Promise<TaskOutcome>> = {
  shell: runShellTask,
  puppet: runPuppetTask,
  sync: runSyncTask,
  upload_file: runUploadFileTask,
  copy_files: runCopyFilesTask,
  reboot: runRebootTask,
};

/** Types that only shape the graph; running them succeeds at once. */
const NO_OP_TYPES = new Set(['stage', 'group', 'skipped']);

/**
 * Executes one task instance on this host and reports how it went. Never throws for a task's
 * failure: bad parameters, refused paths and failing commands all come back as a `failed`
 * outcome with `error` and `errorCode`. Output is streamed to `onOutput` in bounded chunks.
 * Aborting `signal` stops the task (the whole process group) and yields `failed` / `cancelled`.
 * `options.onSpawn` learns each started process group (see `RunTaskOptions`).
 */
export async function runTask(
  exec: TaskExecution,
  ctx: RunnerContext,
  onOutput?: OutputListener,
  signal?: AbortSignal,
  options?: RunTaskOptions,
): Promise<TaskOutcome> {
  // A check changes nothing: every runner's noop path applies to it too (ADR 0031).
  const state = createAttemptState(exec.check ? { ...exec, noop: true } : exec, ctx, onOutput, signal, options);
  const outcome = await runIn(state);
  // An error message may quote a parameter (a refused value): masked like the output.
  return outcome.error === undefined ? outcome : { ...outcome, error: state.output.maskText(outcome.error) };
}

async function runIn(state: AttemptState): Promise<TaskOutcome> {
  const exec = state.exec;
  if (state.signal?.aborted) return cancelled(state, 0);
  if (NO_OP_TYPES.has(exec.type))
    return finished(state, {
      status: 'succeeded',
      exitCode: 0,
      attempts: 0,
      ...(exec.check ? { check: { verdict: 'no_change', reason: `${exec.type} does no work` } } : {}),
    });
  const runner = RUNNERS[exec.type];
  if (!runner) return failedWith(state, new UnknownTaskTypeError(exec.type), 0);
  try {
    return await runner(state);
  } catch (err) {
    // Runners throw only before doing anything (parameters, paths, cwd); later failures are outcomes.
    return failedWith(state, err, 0);
  }
}

/**
 * `runTask` bound to one context: what an agent holds for its lifetime. The environment child
 * processes inherit is this process's as it is when the runner is made (unless the context
 * gives one): copying `process.env` on every task cost more than the rest of its setup.
 */
export class TaskRunner {
  readonly context: RunnerContext;

  constructor(context: RunnerContext) {
    this.context = { ...context, inheritedEnv: context.inheritedEnv ?? Object.freeze(processEnv()) };
  }

  run(
    exec: TaskExecution,
    onOutput?: OutputListener,
    signal?: AbortSignal,
    options?: RunTaskOptions,
  ): Promise<TaskOutcome> {
    return runTask(exec, this.context, onOutput, signal, options);
  }
}

/**
 * True when a reboot was issued and the task must stay pending until the agent comes back
 * (re-registers) or `rebootTimeoutSec` passes; the agent then records the final outcome.
 */
export function isRebootPending(outcome: TaskOutcome): boolean {
  return outcome.rebootRequested === true && outcome.status === 'succeeded';
}

/** The agent's root dir: `GRANULE_ROOT` when set, else the working directory. */
export function resolveRootDir(env: Record<string, string | undefined>, cwd: string): string {
  return env.GRANULE_ROOT && env.GRANULE_ROOT !== '' ? env.GRANULE_ROOT : cwd;
}
