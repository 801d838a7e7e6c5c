import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import { redisKeys } from '@granule/contracts';
import {
  connectRedis,
  startPrivateRedis,
  testRedis,
  type PrivateServer,
  type RedisConnection,
} from '@granule/messaging';
import { RedisPresence } from './redis-presence.adapter';

describe('RedisPresence (Redis)', () => {
  let redis: Redis;
  const prefix = `presadapter${randomBytes(3).toString('hex')}`;
  const keys = redisKeys(prefix);
  /** The keys each MGET asked for (a spy on the real client: the commands still reach Redis). */
  let mgets: string[][];

  beforeAll(() => {
    redis = testRedis();
  });
  beforeEach(() => {
    mgets = [];
    const real = redis.mget.bind(redis) as (keys: string[]) => Promise<Array<string | null>>;
    jest.spyOn(redis, 'mget').mockImplementation(((k: string[]) => {
      mgets.push(k.map((key) => key.slice(key.lastIndexOf(':') + 1)));
      return real(k);
    }) as never);
  });
  afterEach(() => jest.restoreAllMocks());
  afterAll(async () => {
    const left = await redis.keys(`${prefix}:*`);
    if (left.length) await redis.del(...left);
    redis.disconnect();
  });

  const up = (...nodes: string[]) => Promise.all(nodes.map((n) => redis.set(keys.presence(n), '{}', 'EX', 30)));

  it('within maxAge takes a node found online as still online; a node found offline is asked again', async () => {
    await up('a', 'c');
    let now = 1000;
    const presence = new RedisPresence(redis, prefix, { maxAgeMs: 500, clock: () => now });
    expect(await presence.offline(['a', 'b'])).toEqual(['b']);
    now += 100;
    // The watcher's question after a run's health check, in the same tick: b may have come up since.
    await up('b');
    expect([...(await presence.present(['a', 'b', 'c', 'd']))].sort()).toEqual(['a', 'b', 'c']);
    expect(await presence.offline(['d', 'c'])).toEqual(['d']);
    expect(mgets).toEqual([['a', 'b'], ['b', 'c', 'd'], ['d']]);
  });

  it('asks again once an online answer is maxAge old', async () => {
    await up('e', 'f');
    let now = 0;
    const presence = new RedisPresence(redis, prefix, { maxAgeMs: 500, clock: () => now });
    expect(await presence.offline(['e', 'f'])).toEqual([]);
    await redis.del(keys.presence('e'));
    now = 499;
    expect(await presence.offline(['e', 'f'])).toEqual([]); // e's agent died: seen within half a tick
    now = 500;
    expect(await presence.offline(['e', 'f'])).toEqual(['e']);
    expect(mgets).toEqual([
      ['e', 'f'],
      ['e', 'f'],
    ]);
  });

  it('without maxAge every question reads Redis', async () => {
    await up('g');
    const presence = new RedisPresence(redis, prefix);
    expect(await presence.offline(['g', 'h'])).toEqual(['h']);
    await redis.del(keys.presence('g'));
    expect(await presence.offline(['g', 'h'])).toEqual(['g', 'h']);
    expect(mgets).toHaveLength(2);
  });

  it('reads 2,500 nodes in MGETs of 1,000 keys', async () => {
    const nodes = Array.from({ length: 2500 }, (_, i) => `big${i}`);
    await redis
      .pipeline(nodes.filter((_, i) => i % 2 === 0).map((n) => ['set', keys.presence(n), '{}', 'EX', 30]))
      .exec();
    const offline = await new RedisPresence(redis, prefix, { maxAgeMs: 500 }).offline(nodes);
    expect(offline).toEqual(nodes.filter((_, i) => i % 2 === 1));
    expect(mgets.map((k) => k.length)).toEqual([1000, 1000, 500]);
  });

  it('with a Redis up for longer than the TTL, the very first question already reports a missing node (real clock)', async () => {
    await up('m1');
    const presence = new RedisPresence(redis, prefix, { maxAgeMs: 500, ttlMs: 1000 });
    expect(await presence.offline(['m1', 'm2'])).toEqual(['m2']);
  });
});

describe('RedisPresence across a Redis restart (a Redis of its own)', () => {
  let server: PrivateServer;
  let redis: RedisConnection;
  const prefix = 'restart';
  const keys = redisKeys(prefix);
  let now = 0;
  const TTL = 3000;

  beforeAll(async () => {
    server = await startPrivateRedis();
    redis = await connectRedis(server.url);
  }, 30_000);
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  const ready = () => new Promise<void>((resolve) => redis.once('ready', () => resolve()));

  it('takes a missing key for an absent agent only once Redis has been up for a presence TTL, again after a restart', async () => {
    const presence = new RedisPresence(redis, prefix, { ttlMs: TTL, clock: () => now });
    await redis.set(keys.presence('n1'), '{}', 'EX', 30);
    // A Redis up for less than a TTL may have lost keys that live agents are about to set again.
    expect(await presence.offline(['n1', 'n2'])).toEqual([]);
    expect(await presence.absenceKnown()).toBe(false);
    expect([...(await presence.present(['n1', 'n2']))]).toEqual(['n1']);
    now += TTL;
    expect(await presence.offline(['n1', 'n2'])).toEqual(['n2']);

    // Redis restarts and loses every key: nobody is absent until a TTL has passed.
    const back = ready();
    await server.restart(200);
    await back;
    expect(await redis.exists(keys.presence('n1'))).toBe(0);
    expect(await presence.offline(['n1', 'n2'])).toEqual([]);
    now += TTL - 1;
    expect(await presence.offline(['n1', 'n2'])).toEqual([]);
    await redis.set(keys.presence('n1'), '{}', 'EX', 30); // n1's agent beats again
    now += 1;
    expect(await presence.offline(['n1', 'n2'])).toEqual(['n2']);
  }, 30_000);

  it('a reconnection to a Redis that did not restart keeps absences known', async () => {
    now += TTL;
    const presence = new RedisPresence(redis, prefix, { ttlMs: TTL, clock: () => now });
    const uptime = async () => Number(/uptime_in_seconds:(\d+)/.exec(await redis.info('server'))?.[1]);
    // Up for over the TTL (Redis' whole seconds may be one ahead).
    for (let waited = 0; ((await uptime()) - 1) * 1000 < TTL && waited < 10_000; waited += 200)
      await new Promise((r) => setTimeout(r, 200));
    expect(await presence.offline(['n1', 'n2'])).toEqual(['n2']);
    const back = ready();
    redis.disconnect(true); // drops the connection; ioredis connects again
    await back;
    expect(await presence.offline(['n1', 'n2'])).toEqual(['n2']);
  }, 30_000);
});
