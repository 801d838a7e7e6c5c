import { lockStreamId, nodeStreamId, OPEN_RUN_EVENTS, runStreamId } from '@granule/run-events';
import type { RunEvent } from '@granule/run-events';
import type { EventStore, ExpectedVersion, NewEvent, StreamAppend } from '@granule/event-store';
import type { OpenRun, RunEventLog, SideEvent } from '@granule/run-coordination';

/** Run streams (`run-<id>`) in the PostgreSQL event log. */
export class PostgresRunEventLog implements RunEventLog {
  constructor(private readonly store: EventStore) {}

  async append(
    runId: string,
    events: RunEvent[],
    expectedVersion: number,
    metadata?: Record<string, unknown>,
    nodeEvents: SideEvent[] = [],
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
    // Node statuses and locks change with the run's events, in one transaction: never one without
    // the other. A lock stream's NodeLocked goes at the version the run read it at, so of two runs
    // that saw a node free the second append fails (ConcurrencyError) and that run decides again.
    const side = new Map<string, { events: NewEvent[]; expectedVersion: ExpectedVersion }>();
    for (const e of nodeEvents) {
      const streamId = e.type === 'NodeStatusChanged' ? nodeStreamId(e.data.uid) : lockStreamId(e.data.uid);
      const entry = side.get(streamId) ?? { events: [], expectedVersion: 'any' };
      if (e.type === 'NodeLocked' && e.expectedVersion !== 'any' && entry.events.length === 0)
        entry.expectedVersion = e.expectedVersion === 0 ? 'no_stream' : e.expectedVersion;
      entry.events.push({ type: e.type, data: e.data });
      side.set(streamId, entry);
    }
    const others: StreamAppend[] = [...side].map(([streamId, entry]) => ({ streamId, ...entry }));
    const result = await this.store.appendBatch([run, ...others], { metadata });
    return result.streams[0].nextExpectedVersion;
  }

  async read(runId: string): Promise<RunEvent[]> {
    const stored = await this.store.readStream(runStreamId(runId));
    return stored.map((e) => ({ type: e.type, data: e.data }) as RunEvent);
  }

  async first(runId: string): Promise<RunEvent | undefined> {
    const [e] = await this.store.readStream(runStreamId(runId), { toVersion: 1 });
    return e ? ({ type: e.type, data: e.data } as RunEvent) : undefined;
  }

  async exists(runId: string): Promise<boolean> {
    return (await this.store.readStreamVersion(runStreamId(runId))) !== null;
  }

  async lastEventType(runId: string): Promise<string | undefined> {
    return (await this.store.streamHead(runStreamId(runId)))?.lastEventType;
  }

  /** Runs whose last event is not terminal, oldest first, with their first event. */
  async openRuns(): Promise<OpenRun[]> {
    const streams = await this.store.streamsEndingWith('run', OPEN_RUN_EVENTS);
    return streams.map((s) => ({ runId: s.streamId.slice('run-'.length), first: s.first as RunEvent }));
  }
}
