import type { PlanInstance } from '@granule/planner';
import type { RunEvent } from '@granule/run-events';

/** `runs.list` request. */
export interface RunsListRequest {
  limit?: number;
  /** Runs of this environment (the id or the name the deploy named it by). */
  envId?: string;
  /** Runs in one of these phases (`RUN_PHASES`). */
  phases?: string[];
  /** Runs started at or after this time (ISO 8601). */
  since?: string;
  /** Runs started before this time (ISO 8601). */
  until?: string;
}

export interface RunListEntry {
  runId: string;
  /** Phase after the last event: requested, queued, running, stopping, succeeded, failed, stopped, refused. */
  phase: string;
  events: number;
  envId?: string;
  graph?: string;
  /** Who asked for the run (the identity that signed the command). */
  requestedBy?: string;
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
