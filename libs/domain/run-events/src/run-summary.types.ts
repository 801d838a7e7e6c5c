import type { CommandExpiry } from './run-events';
export type InstanceCounts = Record<
  'pending' | 'dispatched' | 'running' | 'succeeded' | 'failed' | 'skipped' | 'dep_failed' | 'timed_out' | 'not_in_run',
  number
>;

/** A run's state as the recap shows it. */
export interface RunSummary {
  runId: string;
  phase: string;
  version: number;
  planId?: string;
  /** Who asked for the run: the identity that signed its command (`anonymous` on a NATS without auth). */
  requestedBy?: string;
  reason?: string;
  /** A check run (ADR 0031): nothing on the hosts was changed. */
  check?: boolean;
  /** A dry run: planned, nothing sent to any host (its tasks stay pending). */
  dryRun?: boolean;
  /** A noop run: nothing on the hosts was changed; the runners reported what they would do. */
  noop?: boolean;
  /** Task instances on real nodes by status. */
  totals: InstanceCounts;
  /** Per node: counts by status (a recap line). */
  nodes: Record<string, InstanceCounts & { failedNode: boolean }>;
  /** Failed, timed out task instances with their last output line. */
  failures: { key: string; status: string; error?: string; outputTail?: string }[];
  /** Task instances dispatched or running now. */
  running: string[];
  /** Tries that failed and were run again on their host (TaskAttemptFailed events). */
  failedTries?: number;
  /** Task instances that needed more than one try. */
  retriedTasks?: number;
  /** Stops and resumes that named this run and expired, never acted on (ADR 0021), oldest first. */
  expiredCommands?: (CommandExpiry & { requestedBy?: string })[];
  /** Strategy runs: the groups' outcome (the phase runs' task counts are in `nodes` and `totals`). */
  strategy?: {
    outcome: string | null;
    groups: {
      name: string;
      critical: boolean;
      status: string;
      stage: string;
      failures: { criteria: string; needed: unknown; actual: unknown }[];
    }[];
    nodes: Record<string, string[]>;
    phaseRuns: string[];
  };
}

/** One task instance of a run, as `runs tasks` lists it. */
export interface TaskInstanceRow {
  key: string;
  task: string;
  node: string;
  status: string;
  /** Tries on the host so far (0 before it started). */
  tries: number;
  exitCode: number | null;
  /** ISO 8601, when it started on its host. */
  startedAt?: string;
  durationMs?: number;
  /** Why it failed, or why its last failed try failed. */
  error?: string;
}
