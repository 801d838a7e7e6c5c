import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { nodeStreamId, redisKeys } from '@granule/contracts';
import { createTestDatabase, EVENT_STORE_MIGRATIONS, EventStore } from '@granule/event-store';
import type { TestDatabase } from '@granule/event-store';
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
    redis = new Redis('redis://127.0.0.1:6379');
  });
  afterAll(async () => {
    const left = await redis.keys(`${prefix}:*`);
    if (left.length) await redis.del(...left);
    redis.disconnect();
    await db.drop();
  });

  const register = (uid: string) =>
    store.appendToStream(nodeStreamId(uid), [{ type: 'NodeRegistered', data: { uid, hostname: uid, address: '127.0.0.1', agentVersion: 't', at: new Date().toISOString() } }], { expectedVersion: 'any' });
  const typesOf = async (uid: string) => (await store.readStream(nodeStreamId(uid))).map((e) => e.type);

  it('records a lapsed presence once as NodeWentOffline, and its return as NodeCameOnline', async () => {
    await register('n1');
    await register('n2');
    await redis.set(keys.presence('n1'), '{}', 'EX', 30);
    const watcher = new NodePresenceWatcher(redis, store, db.dataSource, prefix);
    expect((await watcher.check()).map((e) => `${e.type} ${e.data.uid}`)).toEqual(['NodeWentOffline n2']);
    expect(await watcher.check()).toEqual([]);
    await redis.set(keys.presence('n2'), '{}', 'EX', 30);
    await redis.del(keys.presence('n1'));
    expect((await watcher.check()).map((e) => `${e.type} ${e.data.uid}`).sort()).toEqual(['NodeCameOnline n2', 'NodeWentOffline n1']);
    expect(await typesOf('n2')).toEqual(['NodeRegistered', 'NodeWentOffline', 'NodeCameOnline']);
    // A new watcher (another orchestrator taking over) starts from the streams, not from scratch.
    expect(await new NodePresenceWatcher(redis, store, db.dataSource, prefix).check()).toEqual([]);
  });
});
