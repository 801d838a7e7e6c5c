import { RESUME_WINDOW_DAYS, TERMINAL_RUN_EVENTS } from '@granule/run-events';

/** Anything that runs SQL: a TypeORM `DataSource`, an `EntityManager` inside a transaction, a `QueryRunner`. */
export interface SqlRunner {
  query(sql: string, parameters?: unknown[]): Promise<unknown>;
}

/**
 * The global position of the newest event in the log (`'0'` when it is empty), as text (a
 * bigint): where a change committed now sits in the log. Inside a transaction, a removal
 * records it with itself (config-store's `config_artifact_removals`).
 */
export async function lastGlobalPosition(db: SqlRunner): Promise<string> {
  const rows = (await db.query(`SELECT coalesce(max(global_position), 0)::text AS position FROM granule_events`)) as {
    position: string;
  }[];
  return rows[0]?.position ?? '0';
}

/** A run that may still dispatch tasks (see {@link runsThatMayDispatch}). */
export interface RunThatMayDispatch {
  streamId: string;
  /** Its last event: not terminal, or `DeploymentStopped`. */
  lastEventType: string;
  /** The plans its events name (`PlanAccepted`, `DeploymentQueued`), oldest first; none while it is being planned. */
  planIds: string[];
}

/**
 * The events after which a run dispatches nothing any more, for good: every terminal event but
 * `DeploymentStopped` (a stopped run can be resumed and then dispatches the rest of its plan),
 * and a strategy run's `StrategyReported`.
 */
export const RUN_DONE_EVENTS: readonly string[] = [
  ...TERMINAL_RUN_EVENTS.filter((t) => t !== 'DeploymentStopped'),
  'StrategyReported',
];

/**
 * How long after its stop a stopped run counts as resumable here: the resume window, plus a
 * day, so that an orchestrator whose clock is behind the database's cannot accept a resume of a
 * run whose packages were already deleted.
 */
export const STOPPED_RUN_KEPT_DAYS = RESUME_WINDOW_DAYS + 1;

/**
 * Every run stream (`run-…`) that may still dispatch tasks: its last event is not one of
 * {@link RUN_DONE_EVENTS} (so it is going on, waiting, or stopped and still resumable: stopped
 * less than {@link STOPPED_RUN_KEPT_DAYS} ago), each with the plans it named. Reads the streams' index by last event type, then the plan events of
 * those streams only (by stream). A retry is a run of its own whose `PlanAccepted` names the
 * plan it reruns, so it shows here with that plan.
 */
export async function runsThatMayDispatch(db: SqlRunner): Promise<RunThatMayDispatch[]> {
  const rows = (await db.query(
    `SELECT s.stream_id, coalesce(s.last_event_type, '') AS last_event_type,
            ARRAY(SELECT p.plan_id
                    FROM (SELECT coalesce(e.data->>'planId', e.data->'plan'->>'planId') AS plan_id,
                                 min(e.global_position) AS first_at
                            FROM granule_events e
                           WHERE e.stream_id = s.stream_id AND e.type IN ('PlanAccepted', 'DeploymentQueued')
                           GROUP BY 1) p
                   WHERE p.plan_id IS NOT NULL
                   ORDER BY p.first_at) AS plan_ids
       FROM granule_streams s
      WHERE s.stream_type = 'run' AND (s.last_event_type IS NULL OR s.last_event_type <> ALL($1::text[]))
        AND NOT (coalesce(s.last_event_type, '') = 'DeploymentStopped'
                 AND s.updated_at < now() - make_interval(days => $2))
      ORDER BY s.stream_id`,
    [RUN_DONE_EVENTS, STOPPED_RUN_KEPT_DAYS],
  )) as { stream_id: string; last_event_type: string; plan_ids: string[] }[];
  return rows.map((r) => ({ streamId: r.stream_id, lastEventType: r.last_event_type, planIds: r.plan_ids }));
}
