import type { DataSource } from 'typeorm';
import { nodeStreamId, RUN_EVENT_TYPES, runStreamId, TERMINAL_RUN_EVENTS } from '@granule/contracts';
import type { NodeStatusChanged, RunEvent } from '@granule/contracts';
import type { EventStore } from '@granule/event-store';
import type { OpenRun, RunEventLog } from '@granule/run-coordination';

/** The run event types a run can stop at and still be open. */
const OPEN_RUN_EVENTS = RUN_EVENT_TYPES.filter((type) => !TERMINAL_RUN_EVENTS.includes(type));

/** Run streams (`run-<id>`) in the PostgreSQL event log. */
export class PostgresRunEventLog implements RunEventLog {
  constructor(
    private readonly store: EventStore,
    private readonly dataSource: DataSource,
  ) {}

  async append(
    runId: string,
    events: RunEvent[],
    expectedVersion: number,
    metadata?: Record<string, unknown>,
    nodeEvents: NodeStatusChanged[] = [],
  ): Promise<number> {
    const run = {
      streamId: runStreamId(runId),
      events: events.map((e) => ({ type: e.type, data: e.data })),
      expectedVersion: expectedVersion === 0 ? ('no_stream' as const) : expectedVersion,
    };
    if (nodeEvents.length === 0) {
      const result = await this.store.appendToStream(
        run.streamId,
        run.events,
        { expectedVersion: run.expectedVersion },
        metadata,
      );
      return result.nextExpectedVersion;
    }
    // Node statuses change with the run's events, in one transaction: never one without the other.
    const byNode = new Map<string, NodeStatusChanged[]>();
    for (const e of nodeEvents) byNode.set(e.data.uid, [...(byNode.get(e.data.uid) ?? []), e]);
    const nodes = [...byNode].map(([uid, list]) => ({
      streamId: nodeStreamId(uid),
      events: list.map((e) => ({ type: e.type, data: e.data })),
      expectedVersion: 'any' as const,
    }));
    const result = await this.store.appendBatch([run, ...nodes], { metadata });
    return result.streams[0].nextExpectedVersion;
  }

  async read(runId: string): Promise<RunEvent[]> {
    const stored = await this.store.readStream(runStreamId(runId));
    return stored.map((e) => ({ type: e.type, data: e.data }) as RunEvent);
  }

  async exists(runId: string): Promise<boolean> {
    return (await this.store.readStreamVersion(runStreamId(runId))) !== null;
  }

  /**
   * Runs whose last event is not terminal. Asked as "last event is one of the open types" so
   * that PostgreSQL reads only the open runs' entries of the (stream type, last event type)
   * index: this runs on every tick, and finished runs pile up.
   */
  async openRuns(): Promise<OpenRun[]> {
    const rows: { stream_id: string; first_type: string; first_data: unknown }[] = await this.dataSource.query(
      `SELECT s.stream_id, f.type AS first_type, f.data AS first_data
         FROM granule_streams s
         JOIN granule_events f ON f.stream_id = s.stream_id AND f.stream_version = 1
        WHERE s.stream_type = 'run' AND s.last_event_type = ANY($1::text[])
        ORDER BY s.created_at`,
      [OPEN_RUN_EVENTS],
    );
    return rows.map((r) => ({
      runId: r.stream_id.slice('run-'.length),
      first: { type: r.first_type, data: r.first_data } as RunEvent,
    }));
  }
}
