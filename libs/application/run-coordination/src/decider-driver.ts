import { foldWith } from '@granule/core';
import type { Decider } from '@granule/core';
import { RunError } from '@granule/run-events';
import type { CoordinatorLogger, RunLease } from './ports';

/** Events other streams record in the same transaction, and what to keep once they are recorded. */
export interface Alongside<N> {
  events: N[];
  /** Called once the append succeeded (e.g. remember what was said of each node). */
  recorded(): void;
}

/** The stream log a driver appends to: expected-version appends, reads, existence. */
export interface DriverEventLog<E, N> {
  append(
    streamId: string,
    events: E[],
    expectedVersion: number,
    metadata?: Record<string, unknown>,
    alongside?: N[],
  ): Promise<number>;
  read(streamId: string): Promise<E[]>;
  exists(streamId: string): Promise<boolean>;
}

/** One stream this driver holds: its folded state, version and the process's own in-memory data. */
export interface DrivenStream<S, X, L> {
  readonly id: string;
  state: S;
  /** Version of the last event in the log that `state` folds. */
  version: number;
  context: X;
  /** The process's data that is not in the log (unsent dispatches, planning in progress). */
  readonly local: L;
  /** Serialises everything that touches this stream. */
  queue: Promise<unknown>;
  /** An append failed and the state could not be folded again from the log yet. */
  stale: boolean;
}

/** What a process adds to the generic loop. */
export interface StreamProcess<S, C, E, X, L, N = never> {
  readonly decider: Decider<S, C, E, X>;
  /** Reads the context a stream's events need (the plan a PlanAccepted names). */
  loadContext(streamId: string, events: readonly E[]): Promise<X>;
  newLocal(): L;
  /** Events to append to other streams with these (node statuses that follow the run's events). */
  alongside?(stream: DrivenStream<S, X, L>, events: readonly E[]): Alongside<N> | undefined;
  /** Acts on events once they are in the log (sends dispatches, starts phase runs). */
  react?(stream: DrivenStream<S, X, L>, events: readonly E[]): Promise<void>;
  /** The stream ended and was let go. */
  ended?(stream: DrivenStream<S, X, L>): void;
}

export interface DriverPorts<E, N> {
  log: DriverEventLog<E, N>;
  lease: RunLease;
  logger: CoordinatorLogger;
}

/**
 * The one loop every run kind goes through (emmett's CommandHandler): a queue per stream,
 * decide → append at the expected version → evolve → react, a lease so that one orchestrator
 * drives each stream, and streams taken up from the log after a restart or a takeover. Memory
 * never holds an event the log does not: when an append fails the state is folded again from
 * the log (or marked stale until it can be).
 */
export class DeciderDriver<S, C, E extends { type: string }, X, L, N = never> {
  private readonly streams = new Map<string, DrivenStream<S, X, L>>();

  constructor(
    private readonly process: StreamProcess<S, C, E, X, L, N>,
    private readonly ports: DriverPorts<E, N>,
  ) {}

  /** Streams this driver holds now. */
  ids(): string[] {
    return [...this.streams.keys()];
  }

  get(id: string): DrivenStream<S, X, L> | undefined {
    return this.streams.get(id);
  }

  has(id: string): boolean {
    return this.streams.has(id);
  }

  /**
   * Starts a new stream: refuses an id the log has seen (`RUN_EXISTS`) or another orchestrator
   * holds (`RUN_NOT_OWNED`), then handles `commands` in its queue. When nothing could be
   * recorded the stream does not exist and its lease is let go. `prepare` fills the process's
   * local data before the commands are decided (what they were read with, e.g. lock versions).
   */
  async create(
    id: string,
    commands: C[],
    context: X,
    metadata?: Record<string, unknown>,
    prepare?: (local: L) => void,
  ): Promise<DrivenStream<S, X, L>> {
    if (this.streams.has(id) || (await this.ports.log.exists(id)))
      throw new RunError('RUN_EXISTS', `run ${id} already exists`);
    if (!(await this.ports.lease.acquire(id)))
      throw new RunError('RUN_NOT_OWNED', `run ${id} is driven by another orchestrator`);
    const stream = this.hold(id, this.process.decider.initialState(id), 0, context);
    prepare?.(stream.local);
    try {
      await this.run(stream, () => this.execute(stream, commands, metadata));
    } catch (err) {
      if (stream.version === 0) {
        this.streams.delete(id);
        await this.ports.lease.release(id);
      }
      throw err;
    }
    return stream;
  }

  /**
   * Takes up a stream from the log: its lease, its events, its context, the fold. Undefined
   * (without reading) when another orchestrator holds it, and undefined (lease given back) when
   * `take` refuses what the log holds (ended, gone, another process's).
   */
  async adopt(id: string, take: (events: readonly E[]) => boolean): Promise<DrivenStream<S, X, L> | undefined> {
    const held = this.streams.get(id);
    if (held) return held;
    if (!(await this.ports.lease.acquire(id))) return undefined;
    try {
      const events = await this.ports.log.read(id);
      if (!take(events)) {
        await this.ports.lease.release(id);
        return undefined;
      }
      const context = await this.process.loadContext(id, events);
      return this.hold(id, this.fold(id, events, context), events.length, context);
    } catch (err) {
      await this.ports.lease.release(id);
      throw err;
    }
  }

  /** Runs `job` after everything queued for the stream; a stale stream is folded from the log first. */
  run<T>(stream: DrivenStream<S, X, L>, job: () => Promise<T>): Promise<T> {
    const work = async (): Promise<T> => {
      if (stream.stale) await this.refold(stream);
      return job();
    };
    const next = stream.queue.then(work, work);
    stream.queue = next.catch(() => undefined);
    return next;
  }

  /**
   * Decides the commands in order (each sees the state the previous ones left), appends every
   * resulting event in one append at the stream's version, then reacts and lets go of a stream
   * that has ended. Call it inside `run`.
   */
  async execute(stream: DrivenStream<S, X, L>, commands: C[], metadata?: Record<string, unknown>): Promise<E[]> {
    const { decider } = this.process;
    const events: E[] = [];
    for (const command of commands) {
      const decided = decider.decide(stream.state, command, stream.context);
      for (const e of decided) stream.state = decider.evolve(stream.state, e, stream.context);
      events.push(...decided);
    }
    if (events.length === 0) return events;
    const alongside = this.process.alongside?.(stream, events);
    try {
      stream.version = await this.ports.log.append(
        stream.id,
        events,
        stream.version,
        { correlationId: stream.id, ...metadata },
        alongside?.events,
      );
    } catch (err) {
      // Memory is ahead of the log now. Fold it again from the log; when the log cannot be read
      // either (the database is down), the stream stays stale and every later step folds it first.
      stream.stale = true;
      await this.refold(stream).catch(() => undefined);
      throw err;
    }
    alongside?.recorded();
    await this.process.react?.(stream, events);
    await this.settle(stream);
    return events;
  }

  /** Lets go of a stream whose state has ended. */
  async settle(stream: DrivenStream<S, X, L>): Promise<void> {
    if (!this.process.decider.isEnded(stream.state) || this.streams.get(stream.id) !== stream) return;
    this.streams.delete(stream.id);
    await this.ports.lease.release(stream.id);
    this.process.ended?.(stream);
  }

  /** Lets go of a stream without ending it (another orchestrator may take it). */
  async release(id: string): Promise<void> {
    if (!this.streams.delete(id)) return;
    await this.ports.lease.release(id);
  }

  /**
   * Renews every lease; a stream whose lease is lost (another orchestrator took it, or Redis
   * restarted and lost it) is let go: whoever holds it next goes on from the log.
   */
  async renewLeases(): Promise<DrivenStream<S, X, L>[]> {
    const kept: DrivenStream<S, X, L>[] = [];
    for (const [id, stream] of [...this.streams]) {
      if (await this.ports.lease.renew(id)) {
        kept.push(stream);
        continue;
      }
      this.ports.logger.warn(
        'lost the lease of a run (another orchestrator took it, or Redis lost it); letting go of it',
        { runId: id },
      );
      this.streams.delete(id);
    }
    return kept;
  }

  /** Lets go of every stream (shutdown): their leases go at once so another orchestrator need not wait. */
  async releaseAll(): Promise<void> {
    for (const id of [...this.streams.keys()]) await this.release(id);
  }

  private hold(id: string, state: S, version: number, context: X): DrivenStream<S, X, L> {
    const stream: DrivenStream<S, X, L> = {
      id,
      state,
      version,
      context,
      local: this.process.newLocal(),
      queue: Promise.resolve(),
      stale: false,
    };
    this.streams.set(id, stream);
    return stream;
  }

  private fold(id: string, events: readonly E[], context: X): S {
    return foldWith(this.process.decider, id, events, context);
  }

  private async refold(stream: DrivenStream<S, X, L>): Promise<void> {
    const events = await this.ports.log.read(stream.id);
    stream.state = this.fold(stream.id, events, stream.context);
    stream.version = events.length;
    stream.stale = false;
  }
}
