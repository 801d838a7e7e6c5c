import { isTerminalRunEvent } from '@granule/run-events';
import type { NodeStatusChanged, RunEvent } from '@granule/run-events';
import type { OpenRun, RunEventLog } from '../ports';

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
  async append(
    runId: string,
    events: RunEvent[],
    expectedVersion: number,
    _metadata?: Record<string, unknown>,
    nodeEvents: NodeStatusChanged[] = [],
  ): Promise<number> {
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    if (this.failNextAppend) {
      this.failNextAppend = false;
      throw new Error('the database is gone');
    }
    this.appends.push({ runId, types: events.map((e) => e.type) });
    const stream = this.streams.get(runId) ?? [];
    if (stream.length !== expectedVersion)
      throw new Error(`stream ${runId} is at ${stream.length}, expected ${expectedVersion}`);
    stream.push(...events);
    this.streams.set(runId, stream);
    for (const e of nodeEvents) this.nodeStreams.set(e.data.uid, [...(this.nodeStreams.get(e.data.uid) ?? []), e]);
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
}
