import type { PlanInstance } from '@granule/planner';
import type { CommandExpired, RunEvent, TaskInstanceRow, TaskLogRecord } from '@granule/run-events';

/** The most runs one `runs.list` answer holds (default 50). */
export const RUNS_LIST_MAX = 1000;

/** `runs.list` request. */
export interface RunsListRequest {
  /** At most this many runs, 1 to {@link RUNS_LIST_MAX}. */
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
  /** A check run (ADR 0031). */
  check?: boolean;
  /** A dry run: planned, nothing sent to any host. */
  dryRun?: boolean;
  /** A noop run: the hosts' runners only reported what they would do (puppet --noop). */
  noop?: boolean;
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
  /**
   * Also the stops and resumes that named the run and expired before an orchestrator took them
   * (ADR 0021), as `ExpiredCommandEntry`s among the events by time. Not with `after` or `upTo`:
   * they are not the run's events and have no version of it.
   */
  expiredCommands?: boolean;
}

export interface RunEventEntry {
  version: number;
  at: string;
  event: RunEvent;
}

/** A stop or resume that named a run and expired: its event on its own stream, `command-<commandId>`. */
export interface ExpiredCommandEntry {
  stream: string;
  at: string;
  event: CommandExpired;
}

/** `runs.show` request: the run's state after event `at` (default: the last one). */
export interface RunShowRequest {
  runId: string;
  at?: number;
}

/**
 * `runs.graph` request: one page of a run's plan with each entry's status, or of a stored plan by
 * id. Pages follow the plan's order (priority order, as `granule plan` prints it); a reader asks
 * again with `cursor` = the reply's `next` until a reply has none.
 */
export interface RunGraphRequest {
  runId?: string;
  planId?: string;
  /** Where the page starts: a previous reply's `next`; absent: at the first instance. */
  cursor?: string;
  /** At most this many instances (default: as many as fit `RUN_GRAPH_PAGE_BYTES`, at most `RUN_GRAPH_PAGE_MAX`). */
  limit?: number;
}

export interface RunGraphReply {
  /** This page's instances, in plan order. */
  instances: PlanInstance[];
  /** `task@node` → status of this page's instances (runs only). */
  statuses?: Record<string, string>;
  /** The cursor of the next page; absent on the last page. */
  next?: string;
  /** Instances in the whole plan (on the last page). */
  total?: number;
}

/** A `runs.graph` page holds at most this many instances. */
export const RUN_GRAPH_PAGE_MAX = 100_000;
/**
 * A `runs.graph` page stops once its instances are this many bytes of JSON (or half of what a
 * chunked reply may carry at the server's `max_payload`, when that is less).
 */
export const RUN_GRAPH_PAGE_BYTES = 8 * 1024 * 1024;

/** `runs.tasks` request: every task instance of a run (a strategy run: of its phase runs). */
export interface RunTasksRequest {
  runId: string;
  node?: string;
  /** An instance status (`pending`, `running`, `succeeded`, `failed`, `dep_failed`, ...). */
  status?: string;
}

/** `runs.tasks` reply: the instances, each with the run it ran in (a phase run's id for a strategy run). */
export interface RunTasksReply {
  runId: string;
  phase: string;
  tasks: (TaskInstanceRow & { runId: string })[];
}

/** `runs.logs` request: a run's task logs (a strategy run: its phase runs'), after `after`, in order. */
export interface RunLogsRequest {
  runId: string;
  node?: string;
  /** A task id (every node's instance of it, unless `node` is given). */
  task?: string;
  /** The try on the host (1-based). */
  try?: number;
  stderrOnly?: boolean;
  /** The last record id the reader has (`TaskLogRecord.id`); absent: from the start. */
  after?: string;
  /** At most this many records (default and bound 2,000). */
  limit?: number;
}

export interface RunLogsReply {
  records: TaskLogRecord[];
  /** True when more records follow `records` (ask again with `after` = the last id). */
  more: boolean;
  /** The run (and a strategy run's phases) has ended: nothing more will be written once `more` is false. */
  ended: boolean;
  /** The runs read: the run, or a strategy run's phase runs. */
  runIds: string[];
  /** Output kept per try. */
  limitBytes: number;
}

/**
 * What an orchestrator publishes on `storedLogs.forRun(runId)` after it committed one agent
 * message's records (ADR 0033): the records as `runs.logs` returns them, in id order, with the
 * cut marker where the try's log was cut. `Nats-Msg-Id` is the first record's id.
 */
export interface StoredTaskLogMessage {
  runId: string;
  records: TaskLogRecord[];
  /** The try's last message (its output is complete once stored). */
  end: boolean;
}
