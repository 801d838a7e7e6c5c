import type { QueryRunner } from 'typeorm';
import { waitUntil } from '@granule/messaging';
import { EventStore } from './event-store';
import type { NewEvent, Position, ReadAllOptions, StoredEvent } from './event-store.types';
import { startPollingSubscription } from './polling-subscription';
import { START_POSITION } from './position';
import { createTestDatabase, type TestDatabase } from './testing/test-database';

const noted = (n: string): NewEvent => ({ type: 'Noted', data: { n } });
const positionOf = (e: StoredEvent): Position => ({ transactionId: e.transactionId, globalPosition: e.globalPosition });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('EventStore commit-ordered reading and consumers', () => {
  let db: TestDatabase;
  let store: EventStore;
  const open: QueryRunner[] = [];

  // Each test tags its streams with its own type so it only looks at its own events.
  const mine = (events: StoredEvent[], type: string) => events.filter((e) => e.streamId.startsWith(`${type}-`));
  const readAllAfter = async (after: Position) => store.readAll({ after, maxCount: 1000 });
  // Transaction ids are cluster-wide, so a transaction open in some other database on the
  // server also holds readers back for a moment: poll instead of reading once.
  async function readUntil(after: Position, type: string, count: number): Promise<StoredEvent[]> {
    return waitUntil(
      async () => {
        const events = mine(await readAllAfter(after), type);
        return events.length >= count && events;
      },
      `${count} '${type}' events`,
      3000,
    );
  }

  async function beginTransaction(): Promise<QueryRunner> {
    const runner = db.dataSource.createQueryRunner();
    open.push(runner);
    await runner.connect();
    await runner.startTransaction();
    return runner;
  }

  beforeAll(async () => {
    db = await createTestDatabase('es_order');
    store = new EventStore(db.dataSource);
  });

  afterEach(async () => {
    for (const runner of open.splice(0)) {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      await runner.release();
    }
  });

  afterAll(async () => {
    await db.drop();
  });

  it('holds back a committed event while an older transaction is open, then returns both without skipping', async () => {
    await store.appendToStream('co1-c', [noted('c')], { expectedVersion: 'no_stream' });
    const [c] = await readUntil(START_POSITION, 'co1', 1);

    const late = await beginTransaction();
    await store.appendToStream('co1-a', [noted('a')], { expectedVersion: 'no_stream', queryRunner: late });
    await store.appendToStream('co1-b', [noted('b')], { expectedVersion: 'no_stream' });

    // B is committed, but A's lower transaction id is still running: nothing after C yet.
    expect(await readAllAfter(positionOf(c))).toEqual([]);

    await late.commitTransaction();
    const after = await readUntil(positionOf(c), 'co1', 2);
    expect(after.map((e) => e.streamId)).toEqual(['co1-a', 'co1-b']);
    // A reader ordering by global position alone, checkpointed at B, would have skipped A.
    expect(BigInt(after[0].globalPosition)).toBeLessThan(BigInt(after[1].globalPosition));
  });

  it('orders by transaction id even when the late transaction got the higher global position', async () => {
    await store.appendToStream('co2-c', [noted('c')], { expectedVersion: 'no_stream' });
    const [c] = await readUntil(START_POSITION, 'co2', 1);

    const late = await beginTransaction();
    await late.query('SELECT pg_current_xact_id()'); // takes its transaction id now
    await store.appendToStream('co2-b', [noted('b')], { expectedVersion: 'no_stream' });
    await store.appendToStream('co2-a', [noted('a1'), noted('a2')], {
      expectedVersion: 'no_stream',
      queryRunner: late,
    });
    expect(await readAllAfter(positionOf(c))).toEqual([]);

    await late.commitTransaction();
    const after = await readUntil(positionOf(c), 'co2', 3);
    expect(after.map((e) => e.data)).toEqual([{ n: 'a1' }, { n: 'a2' }, { n: 'b' }]);
    expect(BigInt(after[0].globalPosition)).toBeGreaterThan(BigInt(after[2].globalPosition));
    expect(BigInt(after[0].transactionId)).toBeLessThan(BigInt(after[2].transactionId));
  });

  it('never returns events of a transaction that rolled back', async () => {
    await store.appendToStream('co3-c', [noted('c')], { expectedVersion: 'no_stream' });
    const [c] = await readUntil(START_POSITION, 'co3', 1);
    const doomed = await beginTransaction();
    await store.appendToStream('co3-x', [noted('x')], { expectedVersion: 'no_stream', queryRunner: doomed });
    await store.appendToStream('co3-b', [noted('b')], { expectedVersion: 'no_stream' });
    await doomed.rollbackTransaction();
    expect((await readUntil(positionOf(c), 'co3', 1)).map((e) => e.streamId)).toEqual(['co3-b']);
  });

  it('orders positions as numbers, not text (9 before 10), and pages without skipping any', async () => {
    const start = (await store.appendToStream('digits-a', [noted('x')], { expectedVersion: 'no_stream' })).lastPosition;
    // One transaction whose global positions cross a power of ten: as text, 10 < 11 < 9.
    const next = Number(start.globalPosition) + 1;
    const count = 10 ** String(next).length - next + 3;
    const burst = Array.from({ length: count }, (_, i) => noted(`b${i}`));
    await store.appendToStream('digits-b', burst, { expectedVersion: 'no_stream' });
    const all = await readUntil(start, 'digits', count);
    const positions = all.map((e) => BigInt(e.globalPosition));
    expect(positions).toEqual([...positions].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    // Page by 2: every event once, in order.
    const seen: string[] = [];
    let after = start;
    for (let page = 0; page < count && seen.length < count; page++) {
      const batch = mine(await store.readAll({ after, maxCount: 2 }), 'digits');
      if (batch.length === 0) break;
      seen.push(...batch.map((e) => (e.data as { n: string }).n));
      after = positionOf(batch[batch.length - 1]);
    }
    expect(seen).toEqual(burst.map((e) => (e.data as { n: string }).n));
  });

  it('pages through the log with maxCount and after', async () => {
    await store.appendToStream('co4-p', [noted('1'), noted('2'), noted('3')], { expectedVersion: 'no_stream' });
    const all = await readUntil(START_POSITION, 'co4', 3);
    const page1 = await store.readAll({ after: positionOf(all[0]), maxCount: 1 });
    const page2 = await store.readAll({ after: positionOf(page1[0]), maxCount: 5 });
    expect(page1.map((e) => e.data)).toEqual([{ n: '2' }]);
    expect(mine(page2, 'co4').map((e) => e.data)).toEqual([{ n: '3' }]);
    await expect(store.readAll({ maxCount: 0 })).rejects.toThrow('readAll: maxCount must be a positive integer, got 0');
  });

  it('stores and reads a checkpoint, overwriting the previous one', async () => {
    expect(await store.readCheckpoint('cp-test')).toBeNull();
    await store.storeCheckpoint('cp-test', { transactionId: '5', globalPosition: '9' });
    await store.storeCheckpoint('cp-test', { transactionId: '7', globalPosition: '12' });
    expect(await store.readCheckpoint('cp-test')).toEqual({ transactionId: '7', globalPosition: '12' });
  });

  it('a subscriber waits for a late transaction, and after a restart continues from its checkpoint without re-delivering', async () => {
    const seen: string[] = [];
    const record = (events: StoredEvent[]) => {
      for (const e of mine(events, 'sub')) seen.push(`${e.streamId}@${e.streamVersion}`);
    };

    await store.appendToStream('sub-1', [noted('1'), noted('2')], { expectedVersion: 'no_stream' });
    const first = store.subscribe('sub-consumer', record, { pollIntervalMs: 20, batchSize: 2 });
    await waitUntil(() => seen.length === 2, 'sub-1 events', 3000);

    const late = await beginTransaction();
    await store.appendToStream('sub-late', [noted('late')], { expectedVersion: 'no_stream', queryRunner: late });
    await store.appendToStream('sub-2', [noted('3')], { expectedVersion: 'no_stream' });
    await sleep(100);
    expect(seen).toEqual(['sub-1@1', 'sub-1@2']);

    await late.commitTransaction();
    await waitUntil(() => seen.length === 4, 'late and sub-2 events', 3000);
    await first.stop();
    await first.done;
    expect(seen).toEqual(['sub-1@1', 'sub-1@2', 'sub-late@1', 'sub-2@1']);

    const [last] = await store.readStream('sub-2');
    expect(await store.readCheckpoint('sub-consumer')).toEqual(positionOf(last));

    await store.appendToStream('sub-3', [noted('4')], { expectedVersion: 'no_stream' });
    const stopping = new AbortController();
    const second = store.subscribe('sub-consumer', record, { pollIntervalMs: 20, signal: stopping.signal });
    await waitUntil(() => seen.length === 5, 'sub-3 event', 3000);
    await sleep(80);
    stopping.abort();
    await second.done;
    expect(seen).toEqual(['sub-1@1', 'sub-1@2', 'sub-late@1', 'sub-2@1', 'sub-3@1']);
  });

  it('re-delivers a batch whose handler failed, reports the failures to onError and the first batch that works to onRecovered', async () => {
    await store.appendToStream('retry-1', [noted('1')], { expectedVersion: 'no_stream' });
    const deliveries: string[][] = [];
    const errors: string[] = [];
    let failures = 2;
    let recovered = 0;
    const subscription = store.subscribe(
      'retry-consumer',
      (events) => {
        deliveries.push(mine(events, 'retry').map((e) => e.streamId));
        if (failures-- > 0) throw new Error('handler broke');
      },
      { pollIntervalMs: 20, onError: (error) => errors.push((error as Error).message), onRecovered: () => recovered++ },
    );
    await waitUntil(() => deliveries.length === 3, 'the retries', 3000);
    // Polls after the recovery read nothing new: no second onRecovered.
    await new Promise((r) => setTimeout(r, 100));
    await subscription.stop();
    expect(deliveries).toEqual([['retry-1'], ['retry-1'], ['retry-1']]);
    expect(errors).toEqual(['handler broke', 'handler broke']);
    expect(recovered).toBe(1);
  });

  it('ends the subscription and rejects done when the handler fails and no onError is given', async () => {
    const subscription = store.subscribe(
      'failing-consumer',
      () => {
        throw new Error('no handler today');
      },
      { pollIntervalMs: 20 },
    );
    await expect(subscription.done).rejects.toThrow('no handler today');
    expect(await store.readCheckpoint('failing-consumer')).toBeNull();
  });

  describe('waking on appends (a 60 s poll interval: only the wake-up can deliver in time)', () => {
    const HOUR_LIKE = 60_000;

    it("an append through the same store is read at once; another process's append waits for the poll", async () => {
      const seen: string[] = [];
      await store.appendToStream('wake-0', [noted('0')], { expectedVersion: 'no_stream' });
      const subscription = store.subscribe(
        'wake-consumer',
        (events) => void seen.push(...mine(events, 'wake').map((e) => e.streamId)),
        {
          pollIntervalMs: HOUR_LIKE,
          minIntervalMs: 20,
        },
      );
      try {
        await waitUntil(() => seen.includes('wake-0'), 'the first read', 3000);
        // Another EventStore object stands for another process: its commit tells this one nothing.
        await new EventStore(db.dataSource).appendToStream('wake-other', [noted('x')], {
          expectedVersion: 'no_stream',
        });
        await sleep(300);
        expect(seen).toEqual(['wake-0']);
        await store.appendToStream('wake-1', [noted('1')], { expectedVersion: 'no_stream' });
        await waitUntil(() => seen.length === 3, 'wake-other and wake-1', 3000);
        expect(seen).toEqual(['wake-0', 'wake-other', 'wake-1']);
      } finally {
        await subscription.stop();
      }
    });

    it('without minIntervalMs a subscription only polls', async () => {
      const seen: string[] = [];
      await store.appendToStream('poll-0', [noted('0')], { expectedVersion: 'no_stream' });
      const subscription = store.subscribe(
        'poll-consumer',
        (events) => void seen.push(...mine(events, 'poll').map((e) => e.streamId)),
        { pollIntervalMs: HOUR_LIKE },
      );
      try {
        await waitUntil(() => seen.includes('poll-0'), 'the first read', 3000);
        await store.appendToStream('poll-1', [noted('1')], { expectedVersion: 'no_stream' });
        await sleep(300);
        expect(seen).toEqual(['poll-0']);
      } finally {
        await subscription.stop();
      }
    });

    it('an append held back by an older open transaction is read as soon as that one commits', async () => {
      const seen: string[] = [];
      const subscription = store.subscribe(
        'held-consumer',
        (events) => void seen.push(...mine(events, 'held').map((e) => e.streamId)),
        {
          pollIntervalMs: HOUR_LIKE,
          minIntervalMs: 20,
        },
      );
      try {
        const late = await beginTransaction();
        await store.appendToStream('held-late', [noted('late')], { expectedVersion: 'no_stream', queryRunner: late });
        await store.appendToStream('held-1', [noted('1')], { expectedVersion: 'no_stream' });
        await sleep(200);
        expect(seen).toEqual([]); // held-1 is committed but held back behind the open transaction
        await late.commitTransaction(); // a caller's commit: no wake-up of its own
        await waitUntil(() => seen.length === 2, 'held-late and held-1', 3000);
        expect(seen).toEqual(['held-late', 'held-1']);
      } finally {
        await subscription.stop();
      }
    });

    it('a burst of appends is read in a few batches, not once per append (minIntervalMs)', async () => {
      const seen: string[] = [];
      let reads = 0;
      const counting = {
        readAll: <E extends NewEvent = NewEvent>(options: ReadAllOptions) => {
          reads++;
          return store.readAll<E>(options);
        },
        readCheckpoint: (c: string) => store.readCheckpoint(c),
        storeCheckpoint: (c: string, p: Position) => store.storeCheckpoint(c, p),
        onAppended: (listener: (p: Position) => void) => store.onAppended(listener),
      };
      const subscription = startPollingSubscription(
        counting,
        'burst-consumer',
        (events) => void seen.push(...mine(events, 'burst').map((e) => e.streamId)),
        {
          pollIntervalMs: HOUR_LIKE,
          minIntervalMs: 1000,
        },
      );
      try {
        await waitUntil(() => reads === 1, 'the first read', 3000);
        for (let i = 0; i < 20; i++)
          await store.appendToStream(`burst-${i}`, [noted(String(i))], { expectedVersion: 'no_stream' });
        await waitUntil(() => seen.length === 20, 'the 20 burst events', 3000);
        expect(reads).toBeLessThanOrEqual(4); // once per append would be 21
      } finally {
        await subscription.stop();
      }
    });
  });
});
