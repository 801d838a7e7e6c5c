import type { TaskCheckReport } from './check-report';

/**
 * The id of one dispatch of a task instance: `<run>/<task>@<node>/<attempt>`. It is the
 * JetStream message id of the dispatch and the agent's idempotency key.
 */
export const dispatchIdOf = (runId: string, key: string, attempt: number): string => `${runId}/${key}/${attempt}`;

/**
 * What an agent reports of a dispatched task instance (`started`, then an outcome). The run
 * decider takes it only for the node and dispatch id it issued.
 */
export interface TaskProgressMessage {
  runId: string;
  key: string;
  node: string;
  attempt: number;
  dispatchId: string;
  /**
   * `attempt_failed`: one try of the task on the host failed and the agent runs it again (shell,
   * puppet and sync tasks retry in the agent); `try` and `tries` say which one of how many.
   */
  status: 'started' | 'attempt_failed' | 'succeeded' | 'failed' | 'timed_out';
  at: string;
  exitCode?: number | null;
  durationMs?: number;
  outputTail?: string;
  error?: string;
  /** True when the answer came from the agent's journal (a redelivered dispatch). */
  fromJournal?: boolean;
  /**
   * On an outcome: when the agent started the task. The agent reports `started` only for a task
   * still running a moment after it began (`STARTED_REPORT_DELAY_MS`); for a shorter one the
   * orchestrator records TaskStarted from this field, in the same commit as the outcome.
   */
  startedAt?: string;
  /** `attempt_failed`: the try that failed (1-based); on an outcome: the tries made on the host. */
  try?: number;
  /** `attempt_failed`: the try ran out of time. */
  timedOut?: boolean;
  /** `attempt_failed`: how many tries the task has on the host (its retries + 1). */
  tries?: number;
  /** On an outcome of a check dispatch: what the task found, or that it was skipped (ADR 0031). */
  check?: TaskCheckReport;
}
