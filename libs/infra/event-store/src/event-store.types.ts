import type { QueryRunner } from 'typeorm';

/**
 * Metadata stored next to an event. `correlationId` ties every event of one deployment run
 * together; `causationId` names the command or event that caused this one. Any other
 * JSON-serialisable keys are kept as they are.
 */
export interface EventMetadata {
  correlationId?: string;
  causationId?: string;
  [key: string]: unknown;
}

/** An event on its way into the store. The store does not interpret `type` or `data`. */
export interface NewEvent<Type extends string = string, Data extends object = object> {
  type: Type;
  /** Version of the payload shape, for upcasting on read. Defaults to 1. */
  schemaVersion?: number;
  data: Data;
  metadata?: EventMetadata;
}

/**
 * An event as read back. Versions are numbers (a stream never gets near 2^53 events);
 * `globalPosition` (bigint) and `transactionId` (xid8) are decimal strings.
 * Distributes over a union of `NewEvent`s so `type` still discriminates `data`.
 */
export type StoredEvent<E extends NewEvent = NewEvent> = E extends NewEvent
  ? {
      type: E['type'];
      data: E['data'];
      schemaVersion: number;
      metadata: EventMetadata;
      streamId: string;
      /** 1 for the first event of a stream, gapless. */
      streamVersion: number;
      globalPosition: string;
      transactionId: string;
      createdAt: Date;
    }
  : never;

/**
 * A point in the commit-ordered log: events are read in (transactionId, globalPosition)
 * order. Both parts are decimal strings (xid8 and bigint).
 */
export interface Position {
  transactionId: string;
  globalPosition: string;
}

/**
 * What the writer believes the stream's version to be: a number (0 means "no events yet"),
 * `'no_stream'` (the stream must not exist) or `'any'` (no check).
 */
export type ExpectedVersion = number | 'no_stream' | 'any';

export interface AppendOptions {
  expectedVersion: ExpectedVersion;
  /**
   * Append inside the caller's open transaction instead of a transaction of its own; the
   * caller commits or rolls back, and must roll back after any error (a batch may be half
   * written). Used to write read models atomically with the events.
   */
  queryRunner?: QueryRunner;
}

export interface AppendResult {
  /** Version of the last event written: pass it as `expectedVersion` next time. */
  nextExpectedVersion: number;
  lastGlobalPosition: string;
  /** Commit-order position of the last event written (for "wait until a consumer saw it"). */
  lastPosition: Position;
}

/** One stream's part of an `appendBatch`. */
export interface StreamAppend {
  streamId: string;
  events: NewEvent[];
  expectedVersion: ExpectedVersion;
}

export interface AppendBatchResult {
  /** One entry per `StreamAppend`, in the order given. */
  streams: Array<AppendResult & { streamId: string }>;
  lastGlobalPosition: string;
  lastPosition: Position;
}

export interface ReadStreamOptions {
  /** First version to return, inclusive. Defaults to 1. */
  fromVersion?: number;
  /** Last version to return, inclusive. */
  toVersion?: number;
  maxCount?: number;
}

export interface ReadAllOptions {
  /** Return events strictly after this position. Defaults to the start of the log. */
  after?: Position;
  maxCount: number;
}

/** Handles one batch of events in commit order. The checkpoint moves only once it resolves. */
export type EventBatchHandler = (events: StoredEvent[]) => Promise<void> | void;

export interface SubscribeOptions {
  /** Pause after an incomplete batch before polling again. Defaults to 200 ms. */
  pollIntervalMs?: number;
  /**
   * Wake on appends: an append committed through the same store object ends the pause, and the
   * next read starts `minIntervalMs` after the previous one (at most `pollIntervalMs`), so a
   * burst is read in batches. `pollIntervalMs` then only bounds how late appends of other
   * processes are seen. Without it the subscription only polls.
   */
  minIntervalMs?: number;
  /** Events per batch. Defaults to 500. */
  batchSize?: number;
  /** Stops the subscription when aborted (same as `stop()`). */
  signal?: AbortSignal;
  /**
   * Called when the handler or a read fails. With it, the failed batch is retried after
   * `pollIntervalMs`; without it, the subscription ends and `done` rejects with the error.
   */
  onError?: (error: unknown) => void;
  /** Called at the first read (and handled batch) that works after a failure. */
  onRecovered?: () => void;
}

/** A running polling subscription. */
export interface Subscription {
  /** Stops polling and resolves once the batch in hand is handled and checkpointed. */
  stop(): Promise<void>;
  /** Settles when the subscription ends: resolves on stop, rejects on an unreported error. */
  readonly done: Promise<void>;
}

/**
 * The event log port. Streams are append-only and versioned; `readAll` walks every stream
 * in commit order; named consumers keep a checkpoint so they resume where they stopped.
 */
export interface EventStorePort {
  /**
   * Appends events to one stream in one transaction; throws `ConcurrencyError` on a version
   * mismatch and `InvalidAppendError` on a malformed call (listing every problem). `metadata`
   * is added to every event; keys of an event's own metadata win.
   */
  appendToStream(
    streamId: string,
    events: NewEvent[],
    options: AppendOptions,
    metadata?: EventMetadata,
  ): Promise<AppendResult>;
  /**
   * Appends to several streams in one transaction: all are written or none. Global positions
   * follow the order given (streams, then events).
   */
  appendBatch(
    appends: StreamAppend[],
    options?: { queryRunner?: QueryRunner; metadata?: EventMetadata },
  ): Promise<AppendBatchResult>;
  /** Events of one stream in version order. */
  readStream<E extends NewEvent = NewEvent>(streamId: string, options?: ReadStreamOptions): Promise<StoredEvent<E>[]>;
  /** Current version of a stream, or `null` when it has no events. */
  readStreamVersion(streamId: string): Promise<number | null>;
  /** Committed events of all streams in commit order, never skipping a late commit. */
  readAll<E extends NewEvent = NewEvent>(options: ReadAllOptions): Promise<StoredEvent<E>[]>;
  /** Stored position of a consumer, or `null` if it never stored one. */
  readCheckpoint(consumer: string): Promise<Position | null>;
  storeCheckpoint(consumer: string, position: Position): Promise<void>;
  /**
   * Calls `listener` with the position of the last event after each append this object
   * committed (not one made in a caller's transaction: its commit is the caller's); returns the
   * function that stops it.
   */
  onAppended(listener: (lastPosition: Position) => void): () => void;
  /** Polls `readAll` from the consumer's checkpoint and stores it after each handled batch. */
  subscribe(consumer: string, handler: EventBatchHandler, options?: SubscribeOptions): Subscription;
}

/** A stream's row in `granule_streams`. */
export interface StreamHead {
  streamId: string;
  version: number;
  lastEventType: string;
}

/** A stream with its first event (what kind of run it is) and when it began and last changed. */
export interface StreamListing extends StreamHead {
  createdAt: Date;
  updatedAt: Date;
  first: { type: string; data: Record<string, unknown> };
}
