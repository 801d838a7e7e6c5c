import { GranuleError } from '@granule/core';

/** Stable codes of runner failures; also used as `TaskOutcome.errorCode`. */
export const TASK_RUNNER_ERROR_CODES = [
  'RUNNER_BAD_PARAMETERS',
  'RUNNER_PATH_OUTSIDE_ROOTS',
  'RUNNER_UNKNOWN_TASK_TYPE',
  'RUNNER_SPAWN_FAILED',
  'RUNNER_EXIT_FAILED',
  'RUNNER_TIMED_OUT',
  'RUNNER_CANCELLED',
  'RUNNER_IO_FAILED',
  'RUNNER_JOURNAL_IO',
] as const;
export type TaskRunnerErrorCode = (typeof TASK_RUNNER_ERROR_CODES)[number];

/** Base of the errors the runners raise; `runTask` turns them into a failed outcome. */
export class TaskRunnerError<Code extends TaskRunnerErrorCode = TaskRunnerErrorCode> extends GranuleError<Code> {}

/** The task's parameters cannot be used; `problems` lists every one found. */
export class InvalidTaskParametersError extends TaskRunnerError<'RUNNER_BAD_PARAMETERS'> {
  constructor(
    readonly taskType: string,
    readonly problems: string[],
  ) {
    super('RUNNER_BAD_PARAMETERS', `invalid ${taskType} parameters: ${problems.join('; ')}`);
  }
}

/** A destination resolves outside `RunnerContext.allowedRoots`; nothing was written. */
export class PathOutsideRootsError extends TaskRunnerError<'RUNNER_PATH_OUTSIDE_ROOTS'> {
  constructor(
    /** e.g. `upload_file path`, `sync dst`. */
    readonly what: string,
    readonly path: string,
    /** Where the path really leads (symlinks and `..` resolved). */
    readonly resolvedPath: string,
    readonly allowedRoots: readonly string[],
  ) {
    const roots = allowedRoots.length > 0 ? allowedRoots.join(', ') : 'none configured';
    const via = resolvedPath !== path ? `; it resolves to '${resolvedPath}'` : '';
    super('RUNNER_PATH_OUTSIDE_ROOTS', `${what} '${path}' is outside the allowed roots (${roots})${via}`);
  }
}

/** The task type has no runner. */
export class UnknownTaskTypeError extends TaskRunnerError<'RUNNER_UNKNOWN_TASK_TYPE'> {
  constructor(readonly taskType: string) {
    super('RUNNER_UNKNOWN_TASK_TYPE', `no runner for task type '${taskType}'`);
  }
}

/** Reading or writing a file of a task failed (permissions, disk full, missing source). */
export class TaskIoError extends TaskRunnerError<'RUNNER_IO_FAILED'> {
  constructor(message: string, options?: { cause?: unknown }) {
    super('RUNNER_IO_FAILED', message, options);
  }
}

/** The journal file cannot be read or appended to. */
export class TaskJournalError extends TaskRunnerError<'RUNNER_JOURNAL_IO'> {
  constructor(message: string, options?: { cause?: unknown }) {
    super('RUNNER_JOURNAL_IO', message, options);
  }
}
