import type { TaskType } from '@granule/task-model';
import type { TaskCheckReport } from '@granule/run-events';
import type { Clock } from './clock';
import type { ProcessSpawner } from './process-spawner';

/** One task instance to execute on this host, as the orchestrator dispatched it. */
export interface TaskExecution {
  runId: string;
  taskId: string;
  nodeUid: string;
  type: TaskType;
  /** The task's parameters as written (see the per-type runners for the keys read). */
  parameters: Record<string, unknown>;
  /**
   * Dispatch number given by the orchestrator (1 for the first dispatch, 2 when the orchestrator
   * re-issues the task after a failure). Part of the journal key; not the local retry count.
   */
  attempt?: number;
  /** Report what would be done and change nothing (puppet `--noop`, rsync `--dry-run`). */
  noop?: boolean;
  /**
   * Check mode (ADR 0031): change nothing (as `noop`, which `runTask` sets with it) and say
   * whether the task would change something (`TaskOutcome.check`): puppet `--noop`, rsync
   * `--dry-run`, file tasks compare; shell tasks run only with `check_safe: true`, reboots never.
   */
  check?: boolean;
  /** With `check`: put the difference the task would make in `TaskOutcome.check.diff`. */
  diff?: boolean;
  /**
   * The clear texts of the task's secrets (the values the orchestrator unsealed for it): masked
   * as `***` in its output, output tail and error before anything leaves the runner.
   */
  secrets?: readonly string[];
}

export type OutputStream = 'stdout' | 'stderr';

/**
 * A bounded piece of a task's output; `seq` counts chunks of one `runTask` call from 0; `try` is
 * the try on this host it belongs to (1-based: retries happen here).
 */
export interface OutputChunk {
  stream: OutputStream;
  data: string;
  seq: number;
  try: number;
}

/** A try of a task that failed and is run again (`RunTaskOptions.onTryFailed`). */
export interface FailedTry {
  /** The try that failed, 1-based. */
  try: number;
  /** Tries the task has (its retries + 1). */
  tries: number;
  exitCode: number | null;
  timedOut: boolean;
  error: string;
  durationMs: number;
}

export type TaskOutcomeStatus = 'succeeded' | 'failed' | 'timed_out';

/** What happened when a task ran. */
export interface TaskOutcome {
  status: TaskOutcomeStatus;
  /** Exit code of the last attempt; 0 for a successful file task; null when nothing exited normally. */
  exitCode: number | null;
  /** Signal that ended the last attempt (e.g. `SIGTERM` after a timeout). */
  signal?: string;
  /** Wall time of the whole call, retries and waits included. */
  durationMs: number;
  /** The last `outputTailBytes` of stdout and stderr, interleaved as produced. */
  outputTail: string;
  /** Attempts made on this host (0 when the task was refused before anything ran). */
  attempts: number;
  /** Human explanation when the status is not `succeeded`. */
  error?: string;
  /** Stable code of the failure (a `TaskRunnerErrorCode`). */
  errorCode?: string;
  /**
   * Set by reboot tasks. The reboot command was issued; the agent must keep the task pending
   * until it re-registers after the reboot (or `rebootTimeoutSec` passes), see `isRebootPending`.
   */
  rebootRequested?: boolean;
  /** How long to wait for the host to come back (reboot `parameters.timeout`, default 300). */
  rebootTimeoutSec?: number;
  /** Check mode: what the task found (set on every succeeded outcome of a check). */
  check?: TaskCheckReport;
}

/** Where and how tasks run on this host. */
export interface RunnerContext {
  /** The agent's root dir: relative task paths are resolved against it (see `resolveRootDir`). */
  rootDir: string;
  /**
   * Destinations of upload_file / copy_files / sync must stay under these directories (compared
   * after resolving `..` and symlinks of the existing part of the path). Empty: every write is refused.
   */
  allowedRoots: string[];
  /**
   * The environment child processes start from, before `env`. Default: this process's
   * environment, read at each run (`TaskRunner` reads it once, when it is made).
   */
  inheritedEnv?: Readonly<Record<string, string>>;
  /** Added to the inherited environment for every child process (task `env` wins). */
  env?: Record<string, string>;
  /** Command (run by `/bin/bash -c`) a reboot task issues. Default `systemctl reboot`. */
  rebootCommand?: string;
  /** Default `puppet` (looked up on PATH). */
  puppetBin?: string;
  /** Default `rsync` (looked up on PATH). */
  rsyncBin?: string;
  /** Agent state (puppet vardir/confdir, journal). Default `<rootDir>/.granule`. */
  stateDir?: string;
  clock?: Clock;
  spawner?: ProcessSpawner;
  /** Largest `OutputChunk.data` in UTF-8 bytes. Default 16 KiB. */
  outputChunkBytes?: number;
  /** Output kept for `TaskOutcome.outputTail`. Default 8 KiB. */
  outputTailBytes?: number;
  /** Time between SIGTERM and SIGKILL when a process group is stopped. Default 5000 ms. */
  killGraceMs?: number;
}

/**
 * A task's process group as a later agent process needs it: to find the group again after a
 * crash and to be sure it is still the task's, not an unrelated group that reuses the id.
 */
export interface TaskProcessGroup {
  /** Process group id: the pid of the attempt's first process, which leads the group. */
  pgid: number;
  /** The leader's start time, `/proc/<pid>/stat` field 22 (clock ticks after boot); absent off Linux. */
  startTime?: number;
  /** `/proc/sys/kernel/random/boot_id` when the group started; absent off Linux. */
  bootId?: string;
  /** `GRANULE_RUN_ID` and `GRANULE_TASK_ID` of the group's environment (the execution's ids). */
  runId: string;
  taskId: string;
}

/** Options of one `runTask` call. */
export interface RunTaskOptions {
  /**
   * Called right after each attempt's process group started (retries start new groups), before
   * its output is read; not for file tasks, no-ops, or a process that could not be started. An
   * agent records it so that, after a crash, its next process can stop what the task left running
   * (`stopLeftoverGroup`). Exceptions thrown by it are ignored.
   */
  onSpawn?: (group: TaskProcessGroup) => void;
  /**
   * Called when a try failed and the task will be run again (after its interval), once its
   * output was handed to the output listener. Exceptions thrown by it are ignored.
   */
  onTryFailed?: (failed: FailedTry) => void;
}

/** Receives output as it is produced. Exceptions thrown by it are ignored. */
export type OutputListener = (chunk: OutputChunk) => void;

/** Defaults of shell tasks: seconds, extra attempts, seconds between attempts. */
export const SHELL_DEFAULTS = Object.freeze({ timeout: 300, retries: 2, interval: 2 });
/** Defaults of puppet tasks (retries wait `SHELL_DEFAULTS.interval` unless `interval` is set). */
export const PUPPET_DEFAULTS = Object.freeze({ timeout: 5400, retries: 0 });
/** Defaults of sync tasks: rsync is idempotent, so transient network failures are retried. */
export const SYNC_DEFAULTS = Object.freeze({ timeout: 300, retries: 2, interval: 2 });
/** Defaults of reboot tasks: seconds the agent waits for the host to come back. */
export const REBOOT_DEFAULTS = Object.freeze({ timeout: 300 });
/** Limit of the reboot command itself (not of the wait for the host). */
export const REBOOT_COMMAND_TIMEOUT_SEC = 60;
export const DEFAULT_REBOOT_COMMAND = 'systemctl reboot';
/** `RunnerContext.stateDir` default, relative to the root dir (the journal belongs there too). */
export const DEFAULT_STATE_DIR_NAME = '.granule';
export const DEFAULT_OUTPUT_CHUNK_BYTES = 16 * 1024;
export const DEFAULT_OUTPUT_TAIL_BYTES = 8 * 1024;
export const DEFAULT_KILL_GRACE_MS = 5000;
/** Default mode of files written by upload_file / copy_files, and of directories they create. */
export const DEFAULT_FILE_MODE = 0o644;
export const DEFAULT_DIR_MODE = 0o755;
