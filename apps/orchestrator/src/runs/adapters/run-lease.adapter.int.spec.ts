import { randomBytes } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import type Redis from 'ioredis';
import { executionSubjects, redisKeys } from '@granule/contracts';
import { connectTestNats, testRedis } from '@granule/messaging';
import { NatsIncarnationBeacon } from './incarnation-beacon.adapter';
import { formatLeaseHolder, newLeaseHolder, RedisRunLease, type LeaseHolder } from './run-lease.adapter';

const TTL = 60_000;

describe('RedisRunLease (Redis) with NatsIncarnationBeacon (NATS)', () => {
  let redis: Redis;
  const prefix = `runlease${randomBytes(3).toString('hex')}`;
  const keys = redisKeys(prefix);
  /** Every "process" of a test: its own NATS connection (closing it is the process dying). */
  const processes: NatsConnection[] = [];

  beforeAll(() => {
    redis = testRedis();
  });
  afterEach(async () => {
    await Promise.all(processes.splice(0).map((nc) => (nc.isClosed() ? undefined : nc.close())));
  });
  afterAll(async () => {
    const left = await redis.keys(`${prefix}:*`);
    if (left.length) await redis.del(...left);
    redis.disconnect();
  });

  /** A process of replica `replica`: its incarnation answers on NATS from the start, like the orchestrator's. */
  async function start(
    replica: string,
  ): Promise<{ holder: LeaseHolder; lease: RedisRunLease; nc: NatsConnection; taken: string[] }> {
    const holder = newLeaseHolder(replica);
    const nc = await connectTestNats(formatLeaseHolder(holder));
    processes.push(nc);
    const beacon = new NatsIncarnationBeacon(nc, prefix, holder);
    beacon.start();
    await nc.flush();
    const taken: string[] = [];
    const lease = new RedisRunLease(redis, prefix, holder, TTL, {
      probe: beacon,
      onTakenBack: (name, previous) => taken.push(`${name} from ${previous}`),
    });
    return { holder, lease, nc, taken };
  }

  it('a lease is held by one holder at a time, renewed and released only by it', async () => {
    const a = await start('orch-a');
    const b = await start('orch-b');
    expect([await a.lease.acquire('r1'), await b.lease.acquire('r1'), await a.lease.acquire('r1')]).toEqual([
      true,
      false,
      true,
    ]);
    expect(await redis.get(keys.runLease('r1'))).toBe(formatLeaseHolder(a.holder));
    expect(await b.lease.renew('r1')).toBe(false);
    await b.lease.release('r1');
    expect(await b.lease.acquire('r1')).toBe(false);
    await a.lease.release('r1');
    expect(await b.lease.acquire('r1')).toBe(true);
  });

  it('a restarted replica takes its lease back at once once its previous process is gone; the old one cannot renew it', async () => {
    const before = await start('orch-r');
    expect(await before.lease.acquire('r2')).toBe(true);
    await before.nc.close(); // the process dies: the server drops its connection
    const after = await start('orch-r');
    const started = performance.now();
    expect(await after.lease.acquire('r2')).toBe(true);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(await redis.get(keys.runLease('r2'))).toBe(formatLeaseHolder(after.holder));
    // A whole TTL again, not what was left of the old one's.
    expect(await redis.pttl(keys.runLease('r2'))).toBeGreaterThan(TTL - 5000);
    expect(await before.lease.renew('r2')).toBe(false);
    expect(after.taken).toEqual([`r2 from ${formatLeaseHolder(before.holder)}`]);
  });

  it('two live processes under one replica name never share a lease: the second waits while the first answers', async () => {
    const first = await start('orch-twin');
    const second = await start('orch-twin');
    expect([await first.lease.acquire('r3'), await second.lease.acquire('r3')]).toEqual([true, false]);
    expect(await first.lease.renew('r3')).toBe(true);
    expect(await redis.get(keys.runLease('r3'))).toBe(formatLeaseHolder(first.holder));
  });

  it('an incarnation answers the one reply envelope naming itself', async () => {
    const a = await start('orch-e');
    const reply = await a.nc.request(executionSubjects(prefix).orchestrators.incarnation(a.holder.incarnation), '', {
      timeout: 1000,
    });
    expect(reply.json()).toEqual({ ok: true, result: { replica: 'orch-e', incarnation: a.holder.incarnation } });
  });

  it('a previous process of an older release, answering a bare object, is alive: its lease is not taken back', async () => {
    const old = newLeaseHolder('orch-b4');
    const nc = await connectTestNats('older');
    processes.push(nc);
    nc.subscribe(executionSubjects(prefix).orchestrators.incarnation(old.incarnation), {
      callback: (_err, msg) => void msg.respond(JSON.stringify({ replica: old.replica, incarnation: old.incarnation })),
    });
    await nc.flush();
    await redis.set(keys.runLease('r7'), formatLeaseHolder(old), 'PX', TTL);
    const after = await start('orch-b4');
    expect(await after.lease.acquire('r7')).toBe(false);
    expect(await redis.get(keys.runLease('r7'))).toBe(formatLeaseHolder(old));
  });

  it('a previous process that is alive but does not answer (hung) is not taken for gone', async () => {
    const hung = newLeaseHolder('orch-h');
    const nc = await connectTestNats('hung');
    processes.push(nc);
    // Subscribed, never answering: the request times out.
    nc.subscribe(executionSubjects(prefix).orchestrators.incarnation(hung.incarnation));
    await nc.flush();
    await redis.set(keys.runLease('r4'), formatLeaseHolder(hung), 'PX', TTL);
    const after = await start('orch-h');
    expect(await after.lease.acquire('r4')).toBe(false);
    expect(await redis.get(keys.runLease('r4'))).toBe(formatLeaseHolder(hung));
  });

  it("another replica's lease lapses: it is not taken back even when its process is gone", async () => {
    const other = await start('orch-x');
    expect(await other.lease.acquire('r5')).toBe(true);
    await other.nc.close();
    const survivor = await start('orch-y');
    expect(await survivor.lease.acquire('r5')).toBe(false);
    await redis.pexpire(keys.runLease('r5'), 1); // the lease time passes
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await survivor.lease.acquire('r5')).toBe(true);
  });

  it("a holder value without an incarnation (an older release's) is left to lapse", async () => {
    await redis.set(keys.runLease('r6'), 'orch-o', 'PX', TTL);
    const after = await start('orch-o');
    expect(await after.lease.acquire('r6')).toBe(false);
    expect(await redis.get(keys.runLease('r6'))).toBe('orch-o');
  });
});
