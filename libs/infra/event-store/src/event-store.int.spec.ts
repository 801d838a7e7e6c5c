import { ConcurrencyError, InvalidAppendError } from './event-store.errors';
import { EventStore } from './event-store';
import type { NewEvent } from './event-store.types';
import { createTestDatabase, type TestDatabase } from './testing/test-database';

type TaskEvent =
  NewEvent<'TaskStarted', { taskId: string }> | NewEvent<'TaskSucceeded', { taskId: string; durationMs: number }>;

const started = (taskId: string): NewEvent => ({ type: 'TaskStarted', data: { taskId } });

describe('EventStore (PostgreSQL)', () => {
  let db: TestDatabase;
  let store: EventStore;

  beforeAll(async () => {
    db = await createTestDatabase('es_store');
    store = new EventStore(db.dataSource);
  });

  afterAll(async () => {
    await db.drop();
  });

  it('appends to a new stream and reads the events back in version order with their metadata', async () => {
    const result = await store.appendToStream(
      'run-append',
      [
        started('a'),
        {
          type: 'TaskSucceeded',
          schemaVersion: 2,
          data: { taskId: 'a', durationMs: 12 },
          metadata: { causationId: 'cmd-2' },
        },
      ],
      { expectedVersion: 'no_stream' },
      { correlationId: 'run-append', causationId: 'cmd-1' },
    );
    expect(result.nextExpectedVersion).toBe(2);

    const events = await store.readStream<TaskEvent>('run-append');
    expect(events.map((e) => [e.streamVersion, e.type, e.schemaVersion, e.data, e.metadata])).toEqual([
      [1, 'TaskStarted', 1, { taskId: 'a' }, { correlationId: 'run-append', causationId: 'cmd-1' }],
      [2, 'TaskSucceeded', 2, { taskId: 'a', durationMs: 12 }, { correlationId: 'run-append', causationId: 'cmd-2' }],
    ]);
    expect(events[1].globalPosition).toBe(result.lastGlobalPosition);
    expect(BigInt(events[1].globalPosition)).toBe(BigInt(events[0].globalPosition) + 1n);
    expect(events[0].transactionId).toBe(events[1].transactionId);
    expect(result.lastPosition).toEqual({
      transactionId: events[1].transactionId,
      globalPosition: events[1].globalPosition,
    });
    expect(events[0].createdAt).toBeInstanceOf(Date);
    expect(await store.readStreamVersion('run-append')).toBe(2);
    expect(await store.readStreamVersion('run-missing')).toBeNull();
  });

  it('lists the newest streams of a type by last event, creation time and a field of the first event', async () => {
    const first = (env: string): NewEvent => ({ type: 'DeploymentRequested', data: { envId: env } });
    await store.appendToStream('lst-a', [first('prod'), { type: 'DeploymentFailed', data: {} }], {
      expectedVersion: 'no_stream',
    });
    await store.appendToStream('lst-b', [first('lab')], { expectedVersion: 'no_stream' });
    // The database stamps in microseconds and a Date holds milliseconds: a
    // Date taken right after lst-b can fall before lst-b's own stamp.
    await new Promise((r) => setTimeout(r, 20));
    const betweenBandC = new Date();
    await new Promise((r) => setTimeout(r, 20));
    await store.appendToStream('lst-c', [first('prod'), { type: 'DeploymentSucceeded', data: {} }], {
      expectedVersion: 'no_stream',
    });
    const ids = async (filter: Parameters<EventStore['newestStreams']>[2]) =>
      (await store.newestStreams('lst', 10, filter)).map((s) => s.streamId);
    expect(await ids({})).toEqual(['lst-c', 'lst-b', 'lst-a']);
    expect(await ids({ lastEventTypes: ['DeploymentFailed', 'DeploymentSucceeded'] })).toEqual(['lst-c', 'lst-a']);
    expect(await ids({ firstData: { key: 'envId', values: ['prod'] } })).toEqual(['lst-c', 'lst-a']);
    expect(await ids({ createdFrom: betweenBandC })).toEqual(['lst-c']);
    expect(await ids({ createdBefore: betweenBandC })).toEqual(['lst-b', 'lst-a']);
    expect(await ids({ firstData: { key: 'envId', values: ['prod'] }, lastEventTypes: ['DeploymentFailed'] })).toEqual([
      'lst-a',
    ]);
    expect(await store.newestStreams('lst', 1, {})).toHaveLength(1);
  });

  it('continues a stream from the expected version and reads a version range', async () => {
    await store.appendToStream('run-range', [started('1'), started('2')], { expectedVersion: 0 });
    const next = await store.appendToStream('run-range', [started('3'), started('4'), started('5')], {
      expectedVersion: 2,
    });
    expect(next.nextExpectedVersion).toBe(5);
    const anyResult = await store.appendToStream('run-range', [started('6')], { expectedVersion: 'any' });
    expect(anyResult.nextExpectedVersion).toBe(6);

    const range = await store.readStream('run-range', { fromVersion: 2, toVersion: 5, maxCount: 3 });
    expect(range.map((e) => [e.streamVersion, e.data])).toEqual([
      [2, { taskId: '2' }],
      [3, { taskId: '3' }],
      [4, { taskId: '4' }],
    ]);
    expect((await store.readStream('run-range', { fromVersion: 6 })).map((e) => e.streamVersion)).toEqual([6]);
  });

  it("'any' creates a stream that does not exist yet", async () => {
    const result = await store.appendToStream('node-any', [started('x')], { expectedVersion: 'any' });
    expect(result.nextExpectedVersion).toBe(1);
  });

  it("'no_stream' fails on an existing stream and names the stream and both versions", async () => {
    await store.appendToStream('run-exists', [started('a')], { expectedVersion: 'no_stream' });
    const attempt = store.appendToStream('run-exists', [started('b')], { expectedVersion: 'no_stream' });
    await expect(attempt).rejects.toThrow(new ConcurrencyError('run-exists', 'no_stream', 1));
    await expect(attempt).rejects.toMatchObject({
      code: 'EVENT_STORE_CONCURRENCY',
      message: "stream 'run-exists': expected no stream but the stream is at version 1",
    });
    expect(await store.readStream('run-exists')).toHaveLength(1);
  });

  it('fails an expected version on a stream that does not exist', async () => {
    await expect(store.appendToStream('run-nowhere', [started('a')], { expectedVersion: 3 })).rejects.toMatchObject({
      code: 'EVENT_STORE_CONCURRENCY',
      message: "stream 'run-nowhere': expected version 3 but the stream does not exist",
    });
  });

  it('of two appenders expecting the same version, the one that waited on the lock fails after the other commits', async () => {
    await store.appendToStream('run-race', [started('first')], { expectedVersion: 'no_stream' });
    const winner = db.dataSource.createQueryRunner();
    await winner.connect();
    await winner.startTransaction();
    try {
      await store.appendToStream('run-race', [started('winner')], { expectedVersion: 1, queryRunner: winner });
      let loserSettled = false;
      const loser = store.appendToStream('run-race', [started('loser')], { expectedVersion: 1 }).finally(() => {
        loserSettled = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(loserSettled).toBe(false); // blocked on the stream row lock
      await winner.commitTransaction();
      await expect(loser).rejects.toMatchObject({
        code: 'EVENT_STORE_CONCURRENCY',
        message: "stream 'run-race': expected version 1 but the stream is at version 2",
      });
    } finally {
      await winner.release();
    }
    expect((await store.readStream('run-race')).map((e) => e.data)).toEqual([
      { taskId: 'first' },
      { taskId: 'winner' },
    ]);
  });

  it('lets exactly one of many concurrent appenders with the same expected version win', async () => {
    await store.appendToStream('run-many', [started('0')], { expectedVersion: 'no_stream' });
    const attempts = await Promise.allSettled(
      ['a', 'b', 'c', 'd'].map((id) =>
        store.appendToStream('run-many', [started(id), started(id)], { expectedVersion: 1 }),
      ),
    );
    const won = attempts.filter((a) => a.status === 'fulfilled');
    const lost = attempts.filter((a): a is PromiseRejectedResult => a.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost.map((l) => (l.reason as Error).message)).toEqual(
      Array(3).fill("stream 'run-many': expected version 1 but the stream is at version 3"),
    );
    expect((await store.readStream('run-many')).map((e) => e.streamVersion)).toEqual([1, 2, 3]);
  });

  it('writes a batch across streams in one transaction and nothing when one stream conflicts', async () => {
    const ok = await store.appendBatch([
      { streamId: 'run-b1', events: [started('r1'), started('r2')], expectedVersion: 'no_stream' },
      { streamId: 'node-b1', events: [started('n1')], expectedVersion: 'no_stream' },
    ]);
    expect(ok.streams.map((s) => [s.streamId, s.nextExpectedVersion])).toEqual([
      ['run-b1', 2],
      ['node-b1', 1],
    ]);
    const run = await store.readStream('run-b1');
    const node = await store.readStream('node-b1');
    expect(node[0].transactionId).toBe(run[0].transactionId);
    expect(node[0].globalPosition).toBe(ok.lastGlobalPosition);
    expect(ok.streams[0].lastGlobalPosition).toBe(run[1].globalPosition);

    const conflicting = store.appendBatch([
      { streamId: 'run-b1', events: [started('r3')], expectedVersion: 2 },
      { streamId: 'node-b1', events: [started('n2')], expectedVersion: 5 },
      { streamId: 'node-b2', events: [started('n1')], expectedVersion: 'no_stream' },
    ]);
    await expect(conflicting).rejects.toThrow("stream 'node-b1': expected version 5 but the stream is at version 1");
    expect(await store.readStream('run-b1')).toHaveLength(2);
    expect(await store.readStreamVersion('run-b1')).toBe(2);
    expect(await store.readStreamVersion('node-b2')).toBeNull();
  });

  it("claims a batch of 'any' appends over new and existing streams together, with each stream's versions, positions and last type", async () => {
    await store.appendToStream('node-any1', [started('old')], { expectedVersion: 'no_stream' });
    const result = await store.appendBatch([
      { streamId: 'node-any2', events: [started('a'), { type: 'NodeWentOffline', data: {} }], expectedVersion: 'any' },
      { streamId: 'node-any1', events: [{ type: 'NodeCameOnline', data: {} }], expectedVersion: 'any' },
    ]);
    expect(result.streams.map((r) => [r.streamId, r.nextExpectedVersion])).toEqual([
      ['node-any2', 2],
      ['node-any1', 2],
    ]);
    const any1 = await store.readStream('node-any1');
    const any2 = await store.readStream('node-any2');
    expect(any1.map((e) => e.type)).toEqual(['TaskStarted', 'NodeCameOnline']);
    expect(any2.map((e) => [e.streamVersion, e.type])).toEqual([
      [1, 'TaskStarted'],
      [2, 'NodeWentOffline'],
    ]);
    expect(result.streams[0].lastGlobalPosition).toBe(any2[1].globalPosition);
    expect(result.streams[1].lastGlobalPosition).toBe(any1[1].globalPosition);
    expect(result.lastGlobalPosition).toBe(any1[1].globalPosition); // given last, inserted last
    const rows: Array<{ stream_id: string; last_event_type: string }> = await db.dataSource.query(
      `SELECT stream_id, last_event_type FROM granule_streams WHERE stream_id IN ('node-any1', 'node-any2') ORDER BY stream_id`,
    );
    expect(rows.map((r) => [r.stream_id, r.last_event_type])).toEqual([
      ['node-any1', 'NodeCameOnline'],
      ['node-any2', 'NodeWentOffline'],
    ]);
  });

  it("lets concurrent batches over the same streams in any order all commit, 'any' and checked ones alike, with no gap in any stream", async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `node-crowd${String(i).padStart(2, '0')}`);
    await store.appendBatch(
      ids.map((streamId) => ({ streamId, events: [started('0')], expectedVersion: 'no_stream' as const })),
    );
    const anyBatch = (order: string[], tag: string) =>
      store.appendBatch(
        order.map((streamId) => ({ streamId, events: [started(tag)], expectedVersion: 'any' as const })),
      );
    // A batch with one checked stream takes the one-by-one path; it must not deadlock with the others.
    const mixed = (tag: string) =>
      store.appendBatch([
        ...ids.slice(0, 20).map((streamId) => ({ streamId, events: [started(tag)], expectedVersion: 'any' as const })),
        { streamId: `run-crowd-${tag}`, events: [started(tag)], expectedVersion: 'no_stream' as const },
      ]);
    const results = await Promise.allSettled([
      anyBatch(ids, 'a'),
      anyBatch([...ids].reverse(), 'b'),
      mixed('c'),
      anyBatch(ids.slice(10), 'd'),
      mixed('e'),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    for (const [i, id] of ids.entries()) {
      const versions = (await store.readStream(id)).map((e) => e.streamVersion);
      const expected = 1 + 2 + (i < 20 ? 2 : 0) + (i >= 10 ? 1 : 0);
      expect(versions).toEqual(Array.from({ length: expected }, (_, v) => v + 1));
      expect(await store.readStreamVersion(id)).toBe(expected);
    }
  });

  it("keeps each stream's last event type on its row, whichever way the events were appended", async () => {
    const lastType = async (streamId: string) =>
      (
        (await db.dataSource.query(`SELECT last_event_type FROM granule_streams WHERE stream_id = $1`, [
          streamId,
        ])) as Array<{ last_event_type: string }>
      )[0]?.last_event_type;
    const succeeded = (taskId: string): NewEvent => ({ type: 'TaskSucceeded', data: { taskId } });

    await store.appendToStream('run-last', [started('a'), succeeded('a')], { expectedVersion: 'no_stream' });
    expect(await lastType('run-last')).toBe('TaskSucceeded');
    await store.appendToStream('run-last', [succeeded('b'), started('c')], { expectedVersion: 2 });
    expect(await lastType('run-last')).toBe('TaskStarted');
    await store.appendToStream('run-last', [{ type: 'DeploymentSucceeded', data: {} }], { expectedVersion: 'any' });
    expect(await lastType('run-last')).toBe('DeploymentSucceeded');
    await store.appendToStream('run-last-any', [succeeded('a')], { expectedVersion: 'any' });
    expect(await lastType('run-last-any')).toBe('TaskSucceeded');

    await store.appendBatch([
      { streamId: 'run-last', events: [{ type: 'DeploymentResumed', data: {} }], expectedVersion: 5 },
      {
        streamId: 'node-last',
        events: [started('n'), { type: 'NodeStatusChanged', data: {} }],
        expectedVersion: 'any',
      },
    ]);
    expect([await lastType('run-last'), await lastType('node-last')]).toEqual([
      'DeploymentResumed',
      'NodeStatusChanged',
    ]);

    // A losing append changes nothing on the row.
    await expect(store.appendToStream('run-last', [started('x')], { expectedVersion: 5 })).rejects.toBeInstanceOf(
      ConcurrencyError,
    );
    await expect(
      store.appendBatch([
        { streamId: 'node-last', events: [started('y')], expectedVersion: 'any' },
        { streamId: 'run-last', events: [started('y')], expectedVersion: 5 },
      ]),
    ).rejects.toBeInstanceOf(ConcurrencyError);
    expect([await lastType('run-last'), await lastType('node-last')]).toEqual([
      'DeploymentResumed',
      'NodeStatusChanged',
    ]);
  });

  it('rejects a malformed append naming every problem and writes nothing', async () => {
    const attempt = store.appendBatch([
      { streamId: 'nodash', events: [started('a')], expectedVersion: 'any' },
      { streamId: 'run-x', events: [], expectedVersion: -1 },
      { streamId: 'run-y', events: [{ type: 'TaskStarted', schemaVersion: 0, data: {} }], expectedVersion: 'any' },
      { streamId: 'run-y', events: [started('a')], expectedVersion: 'any' },
    ]);
    await expect(attempt).rejects.toBeInstanceOf(InvalidAppendError);
    await expect(attempt).rejects.toThrow(
      [
        "stream id 'nodash' must look like '<type>-<id>'",
        "stream 'run-x': no events to append",
        "stream 'run-x': expected version must be a non-negative integer, 'no_stream' or 'any', got -1",
        "stream 'run-y': event 0 (TaskStarted) has schema version 0, expected a positive integer",
        "stream 'run-y' appears more than once in one batch",
      ].join('\n'),
    );
    expect(await store.readStreamVersion('run-y')).toBeNull();
  });

  it('keeps JSON payloads with quotes, backslashes and unicode intact', async () => {
    const data = { text: 'say "hi" \\ {x,y} é ✓', nested: { list: [1, null, 'a,b'] } };
    await store.appendToStream('run-json', [{ type: 'Noted', data }], { expectedVersion: 'no_stream' });
    expect((await store.readStream('run-json'))[0].data).toEqual(data);
  });

  it('refuses a caller queryRunner without an open transaction', async () => {
    const runner = db.dataSource.createQueryRunner();
    try {
      await expect(
        store.appendToStream('run-notx', [started('a')], { expectedVersion: 'any', queryRunner: runner }),
      ).rejects.toThrow('the queryRunner passed to an append must have an open transaction');
    } finally {
      await runner.release();
    }
  });
});
