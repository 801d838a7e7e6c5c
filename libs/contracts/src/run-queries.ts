import type { PlanInstance } from '@granule/planner';
import type { RunEvent } from './run-events';

/** `runs.list` request. */
export interface RunsListRequest {
  limit?: number;
}

export interface RunListEntry {
  runId: string;
  /** Phase after the last event: requested, running, stopping, succeeded, failed, stopped, refused. */
  phase: string;
  events: number;
  envId?: string;
  graph?: string;
  startedAt: string;
  updatedAt: string;
}

/** `runs.events` request: events with version in (`after`, `upTo`]. */
export interface RunEventsRequest {
  runId: string;
  after?: number;
  upTo?: number;
}

export interface RunEventEntry {
  version: number;
  at: string;
  event: RunEvent;
}

/** `runs.show` request: the run's state after event `at` (default: the last one). */
export interface RunShowRequest {
  runId: string;
  at?: number;
}

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
  reason?: string;
  /** Task instances on real nodes by status. */
  totals: InstanceCounts;
  /** Per node: counts by status (a recap line). */
  nodes: Record<string, InstanceCounts & { failedNode: boolean }>;
  /** Failed, timed out task instances with their last output line. */
  failures: { key: string; status: string; error?: string; outputTail?: string }[];
  /** Task instances dispatched or running now. */
  running: string[];
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

/** `runs.graph` request: a run's plan with each entry's status, or a stored plan by id. */
export interface RunGraphRequest {
  runId?: string;
  planId?: string;
}

export interface RunGraphReply {
  instances: PlanInstance[];
  /** `task@node` → status (runs only). */
  statuses?: Record<string, string>;
}

export type QueryReply<T> = { ok: true; result: T } | { ok: false; code: string; message: string };
