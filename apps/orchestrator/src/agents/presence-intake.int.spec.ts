import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { executionSubjects, redisKeys } from '@granule/contracts';
import { connectNats, startPrivateNats, testRedis, waitUntil, type PrivateServer } from '@granule/messaging';
import type { Logger } from '@granule/service-kit';
import type { OrchestratorConfig } from '../orchestrator.config';
import { RedisPresence } from '../runs/adapters/redis-presence.adapter';
import { PresenceIntake } from './presence-intake';

describe('PresenceIntake (NATS heartbeats to Redis presence keys)', () => {
  const prefix = `presint${randomBytes(3).toString('hex')}`;
  const s = executionSubjects(prefix);
  const keys = redisKeys(prefix);
  const warnings: string[] = [];
  const logger = {
    info: () => undefined,
    warn: (_f: unknown, msg: string) => warnings.push(msg),
  } as unknown as Logger;
  const config = { subjectPrefix: prefix, presenceTtlSeconds: 2 } as OrchestratorConfig;
  let nats: PrivateServer;
  let nc: NatsConnection;
  let agent: NatsConnection;
  let redis: Redis;
  let intake: PresenceIntake;

  beforeAll(async () => {
    // A NATS of its own: the test restarts it.
    nats = await startPrivateNats();
    nc = await connectNats({ natsUrl: nats.url }, 'presence-intake-test');
    agent = await connectNats({ natsUrl: nats.url }, 'presence-intake-agent');
    redis = testRedis();
    intake = new PresenceIntake(nc, redis, config, logger);
    intake.onApplicationBootstrap();
    await nc.flush();
  });

  afterAll(async () => {
    intake?.onApplicationShutdown();
    await agent?.close();
    await nc?.close();
    const left = await redis.keys(`${prefix}:*`);
    if (left.length) await redis.del(...left);
    redis.disconnect();
    await nats?.stop();
  });

  const beat = (node: string, body: unknown = { uid: node, at: new Date().toISOString() }) =>
    agent.publish(s.agents.heartbeatFrom(node), typeof body === 'string' ? body : JSON.stringify(body));

  it('a heartbeat sets the node presence key with the orchestrator TTL; the subject, not the body, names the node', async () => {
    beat('web-1', { uid: 'db-9', at: new Date().toISOString() });
    const value = await waitUntil(
      async () => (await redis.get(keys.presence('web-1'))) ?? undefined,
      'the presence key of web-1',
      5000,
    );
    expect(JSON.parse(value)).toMatchObject({ uid: 'web-1' });
    const ttl = await redis.ttl(keys.presence('web-1'));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(2);
    expect(await redis.exists(keys.presence('db-9'))).toBe(0);
  });

  it('without beats the key lapses after the TTL; a body that is not JSON is still a beat', async () => {
    beat('web-2', 'not json');
    await waitUntil(async () => (await redis.exists(keys.presence('web-2'))) === 1, 'the presence key of web-2', 5000);
    await waitUntil(
      async () => (await redis.exists(keys.presence('web-2'))) === 0,
      'the presence key of web-2 to lapse',
      4000,
    );
  });

  it('a leaving beat deletes the key at once', async () => {
    beat('web-3');
    await waitUntil(async () => (await redis.exists(keys.presence('web-3'))) === 1, 'the presence key of web-3', 5000);
    beat('web-3', { uid: 'web-3', at: new Date().toISOString(), leaving: true });
    await waitUntil(
      async () => (await redis.exists(keys.presence('web-3'))) === 0,
      'the presence key of web-3 deleted',
      1000,
    );
  });

  it('a subject that is not a node uid writes nothing', async () => {
    agent.publish(`${prefix}.agent.heartbeat.${'x'.repeat(80)}`, '{}');
    beat('web-4');
    await waitUntil(async () => (await redis.exists(keys.presence('web-4'))) === 1, 'the presence key of web-4', 5000);
    expect(await redis.keys(`${prefix}:presence:x*`)).toEqual([]);
  });

  it("what JetStream delivers on a node's heartbeat subject (a push consumer pointed there, its idle heartbeats) is no beat", async () => {
    // Anyone allowed to create a consumer on some stream can choose its deliver subject: here a
    // stream of its own, delivered to ghost-1's heartbeat subject with idle heartbeats every 100 ms.
    const jsm = await jetstreamManager(agent);
    const stream = `${prefix.toUpperCase()}_ANY`;
    await jsm.streams.add({ name: stream, subjects: [`${prefix}.any.>`] });
    await jetstream(agent).publish(`${prefix}.any.1`, JSON.stringify({ uid: 'ghost-1', at: new Date().toISOString() }));
    const target = s.agents.heartbeatFrom('ghost-1');
    const arrived: string[] = [];
    const listener = agent.subscribe(target, {
      callback: (_e, m) => {
        arrived.push(m.headers?.code ? `status ${m.headers.code}` : m.string());
      },
    });
    await agent.flush();
    await jsm.consumers.add(stream, {
      name: 'to-heartbeats',
      deliver_subject: target,
      ack_policy: AckPolicy.None,
      idle_heartbeat: nanos(100),
    });
    await waitUntil(
      () => arrived.length >= 2 && arrived.some((a) => a.startsWith('status')),
      'a delivery and an idle heartbeat on the heartbeat subject',
      5000,
    );
    listener.unsubscribe();
    await jsm.consumers.delete(stream, 'to-heartbeats');
    // A plain beat of another node after them: once it is written, the ones before were taken or not.
    beat('web-5');
    await waitUntil(async () => (await redis.exists(keys.presence('web-5'))) === 1, 'the presence key of web-5', 5000);
    expect(await redis.exists(keys.presence('ghost-1'))).toBe(0);
    await jsm.streams.delete(stream);
  });

  it('absence is not known until heartbeats have reached it for a whole TTL, again after its NATS came back', async () => {
    const presence = new RedisPresence(redis, prefix, { ttlMs: 2000, listeningFor: () => intake.listeningFor() });
    await waitUntil(() => intake.listeningFor() >= 2000, 'a whole TTL of listening', 5000);
    expect(await presence.offline(['gone'])).toEqual(['gone']);

    await nats.restart(300);
    await waitUntil(() => intake.listeningFor() > 0 && !nc.isClosed(), 'the reconnection', 10_000);
    expect(intake.listeningFor()).toBeLessThan(2000);
    // Heartbeats may have been missed while NATS was away: a missing key says nothing yet.
    expect(await presence.offline(['gone'])).toEqual([]);
    await waitUntil(() => intake.listeningFor() >= 2000, 'a whole TTL of listening again', 5000);
    expect(await presence.offline(['gone'])).toEqual(['gone']);
  }, 30_000);
});
