import { isTerminalRunEvent } from '@granule/run-events';
import type { NodeLockEvent, NodeStatusChanged, RunEvent } from '@granule/run-events';
import type { NodeLockLog, NodeLockView, OpenRun, RunEventLog, SideEvent } from '../ports';

/** An event log in memory with the same expected-version rule as the PostgreSQL one (tests). */
export class MemoryRunEventLog implements RunEventLog {
  readonly streams = new Map<string, RunEvent[]>();
  /** Every append call, in order (how events were batched). */
  readonly appends: { runId: string; types: string[] }[] = [];
  /** Set to make the next append fail (as a database outage would). */
  failNextAppend = false;
  /** While set, every append and read fails, as with the database down. */
  down = false;
  /** NodeStatusChanged events by node uid, as appended with the run events. */
  readonly nodeStreams = new Map<string, NodeStatusChanged[]>();
  /** Lock streams by node uid (ADR 0024), with the PostgreSQL log's expected-version rule for NodeLocked. */
  readonly lockStreams = new Map<string, NodeLockEvent[]>();
  async append(
    runId: string,
    events: RunEvent[],
    expectedVersion: number,
    _metadata?: Record<string, unknown>,
    nodeEvents: SideEvent[] = [],
  ): Promise<number> {
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    if (this.failNextAppend) {
      this.failNextAppend = false;
      throw new Error('the database is gone');
    }
    const stream = this.streams.get(runId) ?? [];
    if (stream.length !== expectedVersion)
      throw new Error(`stream ${runId} is at ${stream.length}, expected ${expectedVersion}`);
    // Every check before any write: the append is one transaction.
    for (const e of nodeEvents) {
      if (e.type !== 'NodeLocked' || e.expectedVersion === 'any') continue;
      const at = this.lockStreams.get(e.data.uid)?.length ?? 0;
      if (at !== e.expectedVersion)
        throw new Error(`stream lock-${e.data.uid} is at ${at}, expected ${e.expectedVersion}`);
    }
    this.appends.push({ runId, types: events.map((e) => e.type) });
    stream.push(...events);
    this.streams.set(runId, stream);
    for (const e of nodeEvents) {
      if (e.type === 'NodeStatusChanged')
        this.nodeStreams.set(e.data.uid, [...(this.nodeStreams.get(e.data.uid) ?? []), e]);
      else
        this.lockStreams.set(e.data.uid, [
          ...(this.lockStreams.get(e.data.uid) ?? []),
          { type: e.type, data: e.data } as NodeLockEvent,
        ]);
    }
    return stream.length;
  }
  /** The run of every `read` call, in order. */
  readonly reads: string[] = [];
  async read(runId: string): Promise<RunEvent[]> {
    this.reads.push(runId);
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    return [...(this.streams.get(runId) ?? [])];
  }
  async openRuns(): Promise<OpenRun[]> {
    return [...this.streams]
      .filter(([, e]) => !isTerminalRunEvent(e[e.length - 1].type))
      .map(([runId, e]) => ({ runId, first: e[0] }));
  }
  async exists(runId: string): Promise<boolean> {
    return this.streams.has(runId);
  }
  async first(runId: string): Promise<RunEvent | undefined> {
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    return this.streams.get(runId)?.[0];
  }
  async lastEventType(runId: string): Promise<string | undefined> {
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    const stream = this.streams.get(runId);
    return stream?.[stream.length - 1]?.type;
  }
  async readLocks(uids: readonly string[]): Promise<NodeLockView> {
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    const view: NodeLockView = { holders: new Map(), versions: new Map() };
    for (const uid of uids) {
      const stream = this.lockStreams.get(uid);
      if (!stream?.length) continue;
      view.versions.set(uid, stream.length);
      const last = stream[stream.length - 1];
      if (last.type === 'NodeLocked') view.holders.set(uid, last.data.runId);
    }
    return view;
  }
  /** The NodeLockLog port (`read` is the run streams'). */
  readonly lockLog: NodeLockLog = { read: (uids) => this.readLocks(uids) };
}
