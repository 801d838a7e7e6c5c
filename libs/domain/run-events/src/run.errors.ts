import { GranuleError } from '@granule/core';

/**
 * Why a command on a run is refused, in one vocabulary for every run kind (deployment runs,
 * strategy runs, their phase runs) and every transport.
 */
export type RunErrorCode =
  /** A run id that was used before. */
  | 'RUN_EXISTS'
  /** No run has this id. */
  | 'RUN_UNKNOWN'
  /** The run has ended: there is nothing to stop or resume (a stopped run can be resumed). */
  | 'RUN_ENDED'
  /** Another orchestrator drives the run. */
  | 'RUN_NOT_OWNED'
  /** The run cannot be retried (still going, no plan, a strategy run). */
  | 'RUN_NOT_RETRYABLE'
  /** Resume of a run that is not stopped. */
  | 'RUN_NOT_STOPPED'
  /** Resume of a run stopped longer ago than the resume window (RESUME_WINDOW_DAYS). */
  | 'RUN_RESUME_WINDOW_CLOSED'
  /** The command needs a plan and the run has none. */
  | 'RUN_NO_PLAN'
  /** A node the run needs is held by another run that is going (ADR 0024). */
  | 'NODES_LOCKED'
  /** A strategy run's strategy could not be found or planned. */
  | 'STRATEGY_UNRESOLVED';

export class RunError extends GranuleError<RunErrorCode> {}

/** A run id nobody recorded (`RUN_UNKNOWN`): said the same way by every command that names a run. */
export function runUnknownMessage(runId: string): string {
  return `run ${runId} does not exist (granule runs list shows the runs)`;
}
