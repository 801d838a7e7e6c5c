import type { Pool } from 'pg';
import type { DataSource, QueryRunner } from 'typeorm';
import { ConcurrencyError, InvalidAppendError } from './event-store.errors';
import type {
  AppendBatchResult,
  AppendOptions,
  AppendResult,
  EventBatchHandler,
  EventMetadata,
  EventStorePort,
  ExpectedVersion,
  NewEvent,
  Position,
  ReadAllOptions,
  ReadStreamOptions,
  StoredEvent,
  StreamAppend,
  StreamHead,
  StreamListing,
  SubscribeOptions,
  Subscription,
} from './event-store.types';
import { startPollingSubscription } from './polling-subscription';
import { START_POSITION } from './position';
import { checkStreamId, streamTypeOf } from './stream-id';

interface EventRow {
  global_position: string;
  stream_id: string;
  stream_version: string;
  transaction_id: string;
  type: string;
  schema_version: number;
  data: object;
  metadata: EventMetadata;
  created_at: Date;
}

const EVENT_COLUMNS = `global_position::text AS global_position, stream_id, stream_version, transaction_id::text AS transaction_id,
  type, schema_version, data, metadata, created_at`;

function toStoredEvent(row: EventRow): StoredEvent {
  return {
    type: row.type,
    data: row.data,
    schemaVersion: row.schema_version,
    metadata: row.metadata,
    streamId: row.stream_id,
    streamVersion: Number(row.stream_version),
    globalPosition: row.global_position,
    transactionId: row.transaction_id,
    createdAt: row.created_at,
  };
}

function isCount(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

function validate(appends: StreamAppend[]): void {
  const problems: string[] = [];
  const seen = new Set<string>();
  if (appends.length === 0) problems.push('nothing to append: no streams given');
  for (const { streamId, events, expectedVersion } of appends) {
    const badId = checkStreamId(streamId);
    if (badId) problems.push(badId);
    if (seen.has(streamId)) problems.push(`stream '${streamId}' appears more than once in one batch`);
    seen.add(streamId);
    if (events.length === 0) problems.push(`stream '${streamId}': no events to append`);
    if (typeof expectedVersion === 'number' && !isCount(expectedVersion)) {
      problems.push(
        `stream '${streamId}': expected version must be a non-negative integer, 'no_stream' or 'any', got ${expectedVersion}`,
      );
    }
    events.forEach((event, i) => {
      if (typeof event.type !== 'string' || event.type === '')
        problems.push(`stream '${streamId}': event ${i} has no type`);
      if (event.schemaVersion !== undefined && !(Number.isInteger(event.schemaVersion) && event.schemaVersion > 0)) {
        problems.push(
          `stream '${streamId}': event ${i} (${event.type}) has schema version ${event.schemaVersion}, expected a positive integer`,
        );
      }
    });
  }
  if (problems.length > 0) throw new InvalidAppendError(problems.join('\n'));
}

/** Byte order of the UTF-8 encodings, as PostgreSQL's "C" collation sorts: the order rows are locked in. */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** How an 'any' claim moves a stream row that exists: by the number of events, whatever its version. */
const CLAIM_ANY_ON_CONFLICT = `ON CONFLICT (stream_id) DO UPDATE SET version = granule_streams.version + EXCLUDED.version,
           last_event_type = EXCLUDED.last_event_type, updated_at = now()`;

/**
 * The statement that claims `count` versions on a stream's row after checking `expected`,
 * returning the new version (no row: the check failed). Placeholders: `id` the stream id,
 * `count` the number of events, `extra` the stream type (to create the row) or, for a numbered
 * expected version, that version, `last` the type of the last event appended (kept on the row,
 * so "streams whose last event is X" is an index lookup, not a join over every stream).
 */
function claimStatement(
  expected: ExpectedVersion,
  p: { id: string; count: string; extra: string; last: string },
): string {
  if (expected === 'any') {
    return `INSERT INTO granule_streams (stream_id, stream_type, version, last_event_type) VALUES (${p.id}, ${p.extra}, ${p.count}, ${p.last})
         ${CLAIM_ANY_ON_CONFLICT}
         RETURNING version`;
  }
  if (expected === 'no_stream' || expected === 0) {
    return `INSERT INTO granule_streams (stream_id, stream_type, version, last_event_type) VALUES (${p.id}, ${p.extra}, ${p.count}, ${p.last})
         ON CONFLICT (stream_id) DO NOTHING
         RETURNING version`;
  }
  // Under READ COMMITTED a concurrent winner's committed row is re-checked against the expected
  // version after its lock is released, so the loser updates nothing.
  return `UPDATE granule_streams SET version = version + ${p.count}, last_event_type = ${p.last}, updated_at = now()
         WHERE stream_id = ${p.id} AND version = ${p.extra}
         RETURNING version`;
}

/** What `claimStatement`'s `extra` placeholder stands for. */
function claimExtra(streamId: string, expected: ExpectedVersion): string | number {
  return typeof expected === 'number' && expected !== 0 ? expected : streamTypeOf(streamId);
}

const LISTING_COLUMNS = `s.stream_id, s.version, s.last_event_type, s.created_at, s.updated_at,
       f.type AS first_type, f.data AS first_data`;
const LISTING_FROM = `FROM granule_streams s JOIN granule_events f ON f.stream_id = s.stream_id AND f.stream_version = 1`;

/** Which streams `newestStreams` lists (every condition given must hold). */
export interface StreamFilter {
  lastEventTypes?: readonly string[];
  createdFrom?: Date;
  createdBefore?: Date;
  /** A top-level field of the stream's first event is one of `values`. */
  firstData?: { key: string; values: readonly string[] };
}

interface ListingRow {
  stream_id: string;
  version: string;
  last_event_type: string;
  created_at: Date;
  updated_at: Date;
  first_type: string;
  first_data: Record<string, unknown>;
}

function toListing(r: ListingRow): StreamListing {
  return {
    streamId: r.stream_id,
    version: Number(r.version),
    lastEventType: r.last_event_type,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
    first: { type: r.first_type, data: r.first_data },
  };
}

/**
 * The PostgreSQL event log (tables from `EventStoreSchema1732000000000`) over a TypeORM
 * `DataSource`, using raw SQL.
 *
 * Concurrency: each append moves the stream's row in `granule_streams` with a version check,
 * so of two writers expecting the same version exactly one wins; the other waits for the
 * row lock and then fails with `ConcurrencyError`. Streams of a batch are locked in stream
 * id (byte) order so two batches cannot deadlock; a batch of 'any' appends claims all its
 * streams in one statement.
 */
export class EventStore implements EventStorePort {
  private readonly appendListeners = new Set<(lastPosition: Position) => void>();

  constructor(private readonly dataSource: DataSource) {}

  onAppended(listener: (lastPosition: Position) => void): () => void {
    this.appendListeners.add(listener);
    return () => this.appendListeners.delete(listener);
  }

  /** After a commit of ours: wakes this process's subscriptions (a listener's failure is its own). */
  private appended(result: AppendBatchResult): AppendBatchResult {
    for (const listener of this.appendListeners) {
      try {
        listener(result.lastPosition);
      } catch {
        // A subscription's wake-up cannot fail an append that committed.
      }
    }
    return result;
  }

  /**
   * Runs one of the store's hot, fixed statements as a named prepared statement on the pg pool
   * under the DataSource: PostgreSQL parses and plans it once per connection instead of on every
   * call (for an append, about half of its time). Falls back to `DataSource.query` where the
   * driver holds no pg pool.
   */
  private prepared<T>(name: string, text: string, values: unknown[]): Promise<T[]> {
    const pool = (this.dataSource.driver as { master?: Pool }).master;
    if (typeof pool?.query !== 'function') return this.dataSource.query(text, values);
    return pool.query({ name: `granule_${name}`, text, values }).then((result) => result.rows as T[]);
  }

  async appendToStream(
    streamId: string,
    events: NewEvent[],
    options: AppendOptions,
    metadata?: EventMetadata,
  ): Promise<AppendResult> {
    const result = await this.appendBatch([{ streamId, events, expectedVersion: options.expectedVersion }], {
      queryRunner: options.queryRunner,
      metadata,
    });
    const { nextExpectedVersion, lastGlobalPosition, lastPosition } = result.streams[0];
    return { nextExpectedVersion, lastGlobalPosition, lastPosition };
  }

  async appendBatch(
    appends: StreamAppend[],
    options: { queryRunner?: QueryRunner; metadata?: EventMetadata } = {},
  ): Promise<AppendBatchResult> {
    validate(appends);
    const write = (runner: QueryRunner) => this.write(runner, appends, options.metadata);
    if (options.queryRunner) {
      // Without a transaction each statement would commit alone and a conflict could leave a half-written batch.
      if (!options.queryRunner.isTransactionActive)
        throw new InvalidAppendError('the queryRunner passed to an append must have an open transaction');
      return write(options.queryRunner);
    }

    // The common case, one stream: a single statement (its own transaction), one round trip.
    if (appends.length === 1) return this.appended(await this.appendOne(appends[0], options.metadata));

    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.connect();
      await runner.startTransaction();
      const result = await write(runner);
      await runner.commitTransaction();
      return this.appended(result);
    } catch (error) {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      throw error;
    } finally {
      await runner.release();
    }
  }

  private async write(
    runner: QueryRunner,
    appends: StreamAppend[],
    batchMetadata: EventMetadata | undefined,
  ): Promise<AppendBatchResult> {
    let newVersions: number[];
    if (appends.length > 1 && appends.every((a) => a.expectedVersion === 'any')) {
      newVersions = await this.advanceStreamsAny(runner, appends);
    } else {
      const lockOrder = appends.map((_, i) => i).sort((a, b) => byteOrder(appends[a].streamId, appends[b].streamId));
      newVersions = [];
      for (const i of lockOrder) {
        const { streamId, expectedVersion, events } = appends[i];
        newVersions[i] = await this.advanceStream(
          runner,
          streamId,
          expectedVersion,
          events.length,
          events[events.length - 1].type,
        );
      }
    }

    const streamIds: string[] = [];
    const versions: number[] = [];
    const types: string[] = [];
    const schemaVersions: number[] = [];
    const data: string[] = [];
    const metadata: string[] = [];
    appends.forEach(({ streamId, events }, i) => {
      const first = newVersions[i] - events.length + 1;
      events.forEach((event, j) => {
        streamIds.push(streamId);
        versions.push(first + j);
        types.push(event.type);
        schemaVersions.push(event.schemaVersion ?? 1);
        data.push(JSON.stringify(event.data));
        metadata.push(JSON.stringify({ ...batchMetadata, ...event.metadata }));
      });
    });

    // One multi-row insert for the whole batch; ORDER BY ord keeps global positions in the
    // order the events were given.
    const inserted = await runner.query(
      `INSERT INTO granule_events (stream_id, stream_version, type, schema_version, data, metadata)
       SELECT stream_id, stream_version, type, schema_version, data, metadata
       FROM unnest($1::text[], $2::bigint[], $3::text[], $4::int[], $5::jsonb[], $6::jsonb[])
         WITH ORDINALITY AS e(stream_id, stream_version, type, schema_version, data, metadata, ord)
       ORDER BY ord
       RETURNING stream_id, global_position::text AS global_position, transaction_id::text AS transaction_id`,
      [streamIds, versions, types, schemaVersions, data, metadata],
      true,
    );
    const rows = inserted.records as Array<{ stream_id: string; global_position: string; transaction_id: string }>;
    const transactionId = rows[0].transaction_id;
    // One pass (a batch may hold thousands of streams): each stream's highest position, and the batch's.
    const lastOf = new Map<string, bigint>();
    let highest = -1n;
    for (const r of rows) {
      const position = BigInt(r.global_position);
      if (position > (lastOf.get(r.stream_id) ?? -1n)) lastOf.set(r.stream_id, position);
      if (position > highest) highest = position;
    }
    const lastGlobalPosition = String(highest);
    const streams = appends.map(({ streamId }, i) => {
      const last = String(lastOf.get(streamId));
      return {
        streamId,
        nextExpectedVersion: newVersions[i],
        lastGlobalPosition: last,
        lastPosition: { transactionId, globalPosition: last },
      };
    });
    return { streams, lastGlobalPosition, lastPosition: { transactionId, globalPosition: lastGlobalPosition } };
  }

  /**
   * One stream in one statement: the stream row is claimed in a CTE (the same version check
   * and row lock as `advanceStream`) and the events are inserted only if the claim returned a
   * row, so a conflict writes nothing and a success needs no BEGIN/COMMIT round trips.
   */
  private async appendOne(append: StreamAppend, batchMetadata: EventMetadata | undefined): Promise<AppendBatchResult> {
    const { streamId, events, expectedVersion: expected } = append;
    const params: unknown[] = [
      streamId,
      events.length,
      events.map((e) => e.type),
      events.map((e) => e.schemaVersion ?? 1),
      events.map((e) => JSON.stringify(e.data)),
      events.map((e) => JSON.stringify({ ...batchMetadata, ...e.metadata })),
    ];
    const claim = claimStatement(expected, {
      id: '$1',
      count: '$2',
      extra: '$7',
      last: '($3::text[])[cardinality($3::text[])]',
    });
    params.push(claimExtra(streamId, expected));
    const rows = await this.prepared<{
      version: string | null;
      last_global_position: string | null;
      transaction_id: string | null;
    }>(
      `append_one_${expected === 'any' ? 'any' : expected === 'no_stream' || expected === 0 ? 'new' : 'at'}`,
      `WITH claimed AS (${claim}),
       inserted AS (
         INSERT INTO granule_events (stream_id, stream_version, type, schema_version, data, metadata)
         SELECT $1, c.version - $2 + e.ord, e.type, e.schema_version, e.data, e.metadata
         FROM claimed c
         CROSS JOIN unnest($3::text[], $4::int[], $5::jsonb[], $6::jsonb[]) WITH ORDINALITY AS e(type, schema_version, data, metadata, ord)
         ORDER BY e.ord
         RETURNING global_position, transaction_id
       )
       SELECT (SELECT version FROM claimed)::text AS version,
              (SELECT max(global_position) FROM inserted)::text AS last_global_position,
              (SELECT transaction_id::text FROM inserted LIMIT 1) AS transaction_id`,
      params,
    );
    const row = rows[0];
    if (!row?.version || !row.last_global_position || !row.transaction_id) {
      throw new ConcurrencyError(streamId, expected, await this.readStreamVersion(streamId));
    }
    const nextExpectedVersion = Number(row.version);
    const lastPosition = { transactionId: row.transaction_id, globalPosition: row.last_global_position };
    return {
      streams: [{ streamId, nextExpectedVersion, lastGlobalPosition: row.last_global_position, lastPosition }],
      lastGlobalPosition: row.last_global_position,
      lastPosition,
    };
  }

  /**
   * Claims the versions of a batch whose every stream expects 'any' (nothing to check, so
   * nothing can fail) in one statement instead of one per stream: a thousand node streams
   * marked offline at once are one round trip. Rows are locked in the same (byte) order as the
   * one-by-one path, so the two cannot deadlock each other.
   */
  private async advanceStreamsAny(runner: QueryRunner, appends: StreamAppend[]): Promise<number[]> {
    const claimed = await runner.query(
      `INSERT INTO granule_streams (stream_id, stream_type, version, last_event_type)
       SELECT id, type, count, last FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) AS c(id, type, count, last)
       ORDER BY id COLLATE "C"
       ${CLAIM_ANY_ON_CONFLICT}
       RETURNING stream_id, version::text AS version`,
      [
        appends.map((a) => a.streamId),
        appends.map((a) => streamTypeOf(a.streamId)),
        appends.map((a) => a.events.length),
        appends.map((a) => a.events[a.events.length - 1].type),
      ],
      true,
    );
    const versions = new Map(
      (claimed.records as Array<{ stream_id: string; version: string }>).map((r) => [r.stream_id, Number(r.version)]),
    );
    return appends.map((a) => versions.get(a.streamId) as number);
  }

  /** Claims `count` versions on the stream's row after checking `expected` (recording the last event's type); returns the new version. */
  private async advanceStream(
    runner: QueryRunner,
    streamId: string,
    expected: ExpectedVersion,
    count: number,
    lastType: string,
  ): Promise<number> {
    const claimed = await runner.query(
      claimStatement(expected, { id: '$1', count: '$3', extra: '$2', last: '$4' }),
      [streamId, claimExtra(streamId, expected), count, lastType],
      true,
    );
    const row = claimed.records[0] as { version: string } | undefined;
    if (row) return Number(row.version);

    const actual = await runner.query(`SELECT version FROM granule_streams WHERE stream_id = $1`, [streamId], true);
    const actualRow = actual.records[0] as { version: string } | undefined;
    throw new ConcurrencyError(streamId, expected, actualRow ? Number(actualRow.version) : null);
  }

  async readStream<E extends NewEvent = NewEvent>(
    streamId: string,
    options: ReadStreamOptions = {},
  ): Promise<StoredEvent<E>[]> {
    const rows: EventRow[] = await this.dataSource.query(
      `SELECT ${EVENT_COLUMNS} FROM granule_events
       WHERE stream_id = $1 AND stream_version >= $2 AND ($3::bigint IS NULL OR stream_version <= $3)
       ORDER BY stream_version
       LIMIT $4`,
      [streamId, options.fromVersion ?? 1, options.toVersion ?? null, options.maxCount ?? null],
    );
    return rows.map(toStoredEvent) as StoredEvent<E>[];
  }

  async readStreamVersion(streamId: string): Promise<number | null> {
    const rows = await this.prepared<{ version: string }>(
      'stream_version',
      `SELECT version FROM granule_streams WHERE stream_id = $1`,
      [streamId],
    );
    return rows.length > 0 ? Number(rows[0].version) : null;
  }

  /** A stream's version and last event type (one row of `granule_streams`); null for a stream that does not exist. */
  async streamHead(streamId: string): Promise<StreamHead | null> {
    const rows = await this.prepared<{ version: string; last_event_type: string }>(
      'stream_head',
      `SELECT version, last_event_type FROM granule_streams WHERE stream_id = $1`,
      [streamId],
    );
    return rows.length > 0
      ? { streamId, version: Number(rows[0].version), lastEventType: rows[0].last_event_type }
      : null;
  }

  /** Heads of the given streams (those that exist). */
  async streamHeads(streamIds: readonly string[]): Promise<StreamHead[]> {
    if (streamIds.length === 0) return [];
    const rows: Array<{ stream_id: string; version: string; last_event_type: string }> = await this.dataSource.query(
      `SELECT stream_id, version, last_event_type FROM granule_streams WHERE stream_id = ANY($1::text[])`,
      [streamIds],
    );
    return rows.map((r) => ({ streamId: r.stream_id, version: Number(r.version), lastEventType: r.last_event_type }));
  }

  /**
   * The last event of each of the given streams that exist (in no particular order): one index
   * lookup per stream, however long the stream (a node's lock stream, ADR 0024).
   */
  async lastEvents<E extends NewEvent = NewEvent>(streamIds: readonly string[]): Promise<StoredEvent<E>[]> {
    if (streamIds.length === 0) return [];
    const rows: EventRow[] = await this.dataSource.query(
      `SELECT ${EVENT_COLUMNS} FROM granule_events
       WHERE (stream_id, stream_version) IN (
         SELECT stream_id, version FROM granule_streams WHERE stream_id = ANY($1::text[]))`,
      [streamIds],
    );
    return rows.map(toStoredEvent) as StoredEvent<E>[];
  }

  /** Ids of every stream of a type (`node`, `run`), oldest first. */
  async streamIdsOfType(streamType: string): Promise<string[]> {
    const rows: Array<{ stream_id: string }> = await this.dataSource.query(
      `SELECT stream_id FROM granule_streams WHERE stream_type = $1 ORDER BY created_at`,
      [streamType],
    );
    return rows.map((r) => r.stream_id);
  }

  /**
   * Streams of a type whose last event is one of `lastEventTypes`, oldest first, each with its
   * first event. Asked as "last event is one of these" so that PostgreSQL reads only those
   * entries of the (stream type, last event type) index: open runs are asked for on every tick,
   * and finished runs pile up. With `firstData`, only those whose first event's top-level field
   * is one of its values (the stops and resumes that named a run and expired: ADR 0021).
   */
  async streamsEndingWith(
    streamType: string,
    lastEventTypes: readonly string[],
    firstData?: StreamFilter['firstData'],
  ): Promise<StreamListing[]> {
    const params: unknown[] = [streamType, lastEventTypes];
    const naming = firstData
      ? `AND f.data ->> $${params.push(firstData.key)} = ANY($${params.push(firstData.values)}::text[])`
      : '';
    const rows: ListingRow[] = await this.dataSource.query(
      `SELECT ${LISTING_COLUMNS} ${LISTING_FROM}
        WHERE s.stream_type = $1 AND s.last_event_type = ANY($2::text[]) ${naming}
        ORDER BY s.created_at`,
      params,
    );
    return rows.map(toListing);
  }

  /** The newest streams of a type, newest first, each with its first event. */
  async newestStreams(streamType: string, limit: number, filter: StreamFilter = {}): Promise<StreamListing[]> {
    const where = ['s.stream_type = $1'];
    const params: unknown[] = [streamType, limit];
    const param = (value: unknown): string => `$${params.push(value)}`;
    if (filter.lastEventTypes) where.push(`s.last_event_type = ANY(${param(filter.lastEventTypes)})`);
    if (filter.createdFrom) where.push(`s.created_at >= ${param(filter.createdFrom)}`);
    if (filter.createdBefore) where.push(`s.created_at < ${param(filter.createdBefore)}`);
    if (filter.firstData)
      where.push(`f.data ->> ${param(filter.firstData.key)} = ANY(${param(filter.firstData.values)})`);
    const rows: ListingRow[] = await this.dataSource.query(
      `SELECT ${LISTING_COLUMNS} ${LISTING_FROM}
        WHERE ${where.join(' AND ')}
        ORDER BY s.created_at DESC LIMIT $2`,
      params,
    );
    return rows.map(toListing);
  }

  /** How many streams of a type end with each event type. */
  async countStreamsByLastEvent(streamType: string): Promise<Map<string, number>> {
    const rows: Array<{ type: string; streams: string }> = await this.dataSource.query(
      `SELECT last_event_type AS type, count(*)::text AS streams FROM granule_streams
        WHERE stream_type = $1 GROUP BY last_event_type`,
      [streamType],
    );
    return new Map(rows.map((r) => [r.type, Number(r.streams)]));
  }

  /** Events in the log: the sum of stream versions (exact, and cheap: one row per stream). */
  async countEvents(): Promise<number> {
    const [row]: Array<{ events: string }> = await this.dataSource.query(
      `SELECT COALESCE(sum(version), 0)::text AS events FROM granule_streams`,
    );
    return Number(row.events);
  }

  /** Committed events after `consumer`'s checkpoint (all of them when it has none). */
  async consumerLag(consumer: string): Promise<number> {
    const [row]: Array<{ lag: string }> = await this.dataSource.query(
      `SELECT count(*)::text AS lag
         FROM granule_events e
         LEFT JOIN granule_checkpoints c ON c.consumer = $1
        WHERE c.consumer IS NULL OR (e.transaction_id, e.global_position) > (c.transaction_id, c.global_position)`,
      [consumer],
    );
    return Number(row.lag);
  }

  /**
   * Commit-ordered read. Only events of transactions older than the oldest one still running
   * (`pg_snapshot_xmin`) are returned, so an event whose transaction commits late can never
   * land behind a position a reader has already passed. The price: one long-running
   * writer transaction holds back every reader until it ends.
   */
  async readAll<E extends NewEvent = NewEvent>(options: ReadAllOptions): Promise<StoredEvent<E>[]> {
    if (!(Number.isSafeInteger(options.maxCount) && options.maxCount > 0)) {
      throw new RangeError(`readAll: maxCount must be a positive integer, got ${options.maxCount}`);
    }
    const after = options.after ?? START_POSITION;
    const rows = await this.prepared<EventRow>(
      'read_all',
      `SELECT ${EVENT_COLUMNS} FROM granule_events
       WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
         AND (transaction_id, global_position) > ($1::xid8, $2::bigint)
       ORDER BY granule_events.transaction_id, granule_events.global_position -- the columns, not the text aliases
       LIMIT $3`,
      [after.transactionId, after.globalPosition, options.maxCount],
    );
    return rows.map(toStoredEvent) as StoredEvent<E>[];
  }

  async readCheckpoint(consumer: string): Promise<Position | null> {
    const rows: Array<{ transaction_id: string; global_position: string }> = await this.dataSource.query(
      `SELECT transaction_id::text AS transaction_id, global_position::text AS global_position FROM granule_checkpoints WHERE consumer = $1`,
      [consumer],
    );
    return rows.length > 0 ? { transactionId: rows[0].transaction_id, globalPosition: rows[0].global_position } : null;
  }

  /** Stores the consumer's position unconditionally (last writer wins). */
  async storeCheckpoint(consumer: string, position: Position): Promise<void> {
    await this.prepared(
      'store_checkpoint',
      `INSERT INTO granule_checkpoints (consumer, transaction_id, global_position) VALUES ($1, $2::xid8, $3::bigint)
       ON CONFLICT (consumer) DO UPDATE
         SET transaction_id = EXCLUDED.transaction_id, global_position = EXCLUDED.global_position, updated_at = now()`,
      [consumer, position.transactionId, position.globalPosition],
    );
  }

  subscribe(consumer: string, handler: EventBatchHandler, options?: SubscribeOptions): Subscription {
    return startPollingSubscription(this, consumer, handler, options);
  }
}
