import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import { nodeStreamId, redisKeys } from '@granule/contracts';
import { createTestDatabase, EVENT_STORE_MIGRATIONS, EventStore } from '@granule/event-store';
import type { TestDatabase } from '@granule/event-store';
import { testRedis } from '@granule/messaging';
import { RedisPresence } from '../runs/adapters/redis-presence.adapter';
import { NodePresenceWatcher } from './node-presence.watcher';

describe('NodePresenceWatcher (PostgreSQL, Redis)', () => {
  let db: TestDatabase;
  let redis: Redis;
  let store: EventStore;
  const prefix = `presence${randomBytes(3).toString('hex')}`;
  const keys = redisKeys(prefix);

  beforeAll(async () => {
    db = await createTestDatabase('presence', { migrations: EVENT_STORE_MIGRATIONS });
    store = new EventStore(db.dataSource);
    redis = testRedis();
  });
  afterAll(async () => {
    const left = await redis.keys(`${prefix}:*`);
    if (left.length) await redis.del(...left);
    redis.disconnect();
    await db.drop();
  });

  const register = (uid: string) =>
    store.appendToStream(
      nodeStreamId(uid),
      [
        {
          type: 'NodeRegistered',
          data: { uid, hostname: uid, address: '127.0.0.1', agentVersion: 't', at: new Date().toISOString() },
        },
      ],
      { expectedVersion: 'any' },
    );
  const typesOf = async (uid: string) => (await store.readStream(nodeStreamId(uid))).map((e) => e.type);

  it('records a lapsed presence once as NodeWentOffline, and its return as NodeCameOnline', async () => {
    await register('n1');
    await register('n2');
    await redis.set(keys.presence('n1'), '{}', 'EX', 30);
    const watcher = new NodePresenceWatcher(new RedisPresence(redis, prefix), store);
    expect((await watcher.check()).map((e) => `${e.type} ${e.data.uid}`)).toEqual(['NodeWentOffline n2']);
    expect(await watcher.check()).toEqual([]);
    await redis.set(keys.presence('n2'), '{}', 'EX', 30);
    await redis.del(keys.presence('n1'));
    expect((await watcher.check()).map((e) => `${e.type} ${e.data.uid}`).sort()).toEqual([
      'NodeCameOnline n2',
      'NodeWentOffline n1',
    ]);
    expect(await typesOf('n2')).toEqual(['NodeRegistered', 'NodeWentOffline', 'NodeCameOnline']);
    // A new watcher (another orchestrator taking over) starts from the streams, not from scratch.
    expect(await new NodePresenceWatcher(new RedisPresence(redis, prefix), store).check()).toEqual([]);
  });
  it('starts again from the streams after forget(): a change another orchestrator wrote is not written twice, a stale memory is not trusted', async () => {
    await register('n3');
    const watcher = new NodePresenceWatcher(new RedisPresence(redis, prefix), store);
    expect((await watcher.check()).map((e) => `${e.type} ${e.data.uid}`)).toEqual(['NodeWentOffline n3']);
    // Meanwhile another orchestrator watched, saw n3 come back and wrote it; the key has lapsed again since.
    await store.appendToStream(
      nodeStreamId('n3'),
      [{ type: 'NodeCameOnline', data: { uid: 'n3', at: new Date().toISOString() } }],
      { expectedVersion: 'any' },
    );
    expect(await watcher.check()).toEqual([]); // its memory still says offline
    watcher.forget();
    expect((await watcher.check()).map((e) => `${e.type} ${e.data.uid}`)).toEqual(['NodeWentOffline n3']);
    expect(await typesOf('n3')).toEqual(['NodeRegistered', 'NodeWentOffline', 'NodeCameOnline', 'NodeWentOffline']);
  });

  it('checks 1,200 nodes in batches: a mass outage is written once per node, in a few transactions', async () => {
    const uids = Array.from({ length: 1200 }, (_, i) => `m${i}`);
    for (let k = 0; k < uids.length; k += 400) {
      await store.appendBatch(
        uids.slice(k, k + 400).map((uid) => ({
          streamId: nodeStreamId(uid),
          events: [{ type: 'NodeRegistered', data: { uid } }],
          expectedVersion: 'no_stream' as const,
        })),
      );
    }
    const up = uids.filter((_, i) => i % 3 === 0);
    await redis.pipeline(up.map((uid) => ['set', keys.presence(uid), '{}', 'EX', 60])).exec();
    const watcher = new NodePresenceWatcher(new RedisPresence(redis, prefix), store);
    const written = await watcher.check(); // n1-n3 of the tests before are offline and known so: no event
    expect(written).toHaveLength(800);
    expect(new Set(written.map((e) => e.type))).toEqual(new Set(['NodeWentOffline']));
    expect(written.map((e) => e.data.uid).sort()).toEqual(uids.filter((_, i) => i % 3 !== 0).sort());
    // Read back through the event store: each offline node's last event, and the transactions that wrote them.
    const stored = await store.lastEvents(written.map((e) => nodeStreamId(e.data.uid)));
    expect(stored.map((e) => e.type)).toEqual(written.map(() => 'NodeWentOffline'));
    expect(new Set(stored.map((e) => e.transactionId)).size).toBe(2); // 800 streams, 500 per transaction
    expect(await watcher.check()).toEqual([]);
    await redis.del(...up.map((uid) => keys.presence(uid)));
  });
});
