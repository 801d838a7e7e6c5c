import { request } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { Pool } from 'pg';
import { Redis } from 'ioredis';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectRedis, connectTestNats, testServices, type RedisConnection } from '@granule/messaging';
import { createMetrics } from './granule-metrics';
import { serveHealthChecks, startHealthServer, type HealthServer } from './health-server';
import { natsCheck, postgresCheck, redisCheck } from './readiness-checks';

const PG_URL = process.env.GRANULE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

function get(port: number, path: string, method = 'GET'): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A port nothing listens on: bind one, note it, close it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('health server against the real NATS, PostgreSQL and Redis', () => {
  let nats: NatsConnection;
  let redis: RedisConnection;
  let pool: Pool;
  const servers: HealthServer[] = [];
  const cleanups: Array<() => Promise<unknown> | unknown> = [];

  beforeAll(async () => {
    nats = await connectTestNats('granule-observability-test');
    redis = await connectRedis(testServices().redisUrl);
    pool = new Pool({ connectionString: PG_URL, max: 2 });
  });

  afterAll(async () => {
    for (const s of servers) await s.close();
    for (const c of cleanups) await c();
    await nats.close();
    redis.disconnect();
    await pool.end();
  });

  const start = async (options: Parameters<typeof startHealthServer>[0]): Promise<HealthServer> => {
    const server = await startHealthServer(options);
    servers.push(server);
    return server;
  };

  it('/healthz answers 200 {"status":"ok"} without running the checks', async () => {
    let ran = 0;
    const server = await start({
      port: 0,
      host: '127.0.0.1',
      checks: [{ name: 'postgres', probe: async () => ran++ }],
    });
    const res = await get(server.port, '/healthz');
    expect([res.status, res.type, JSON.parse(res.body)]).toEqual([200, 'application/json', { status: 'ok' }]);
    expect(ran).toBe(0);
  });

  it('/readyz answers 200 when NATS, PostgreSQL and Redis all answer', async () => {
    const server = await start({
      port: 0,
      host: '127.0.0.1',
      checks: [natsCheck(nats), postgresCheck(pool), redisCheck(redis)],
    });
    const res = await get(server.port, '/readyz');
    const body = JSON.parse(res.body);
    expect(res.status).toBe(200);
    expect(body.status).toBe('ready');
    expect(body.failing).toEqual([]);
    expect(Object.entries(body.checks).map(([name, r]) => [name, (r as { ok: boolean }).ok])).toEqual([
      ['nats', true],
      ['postgres', true],
      ['redis', true],
    ]);
  });

  it('/readyz answers 503 naming PostgreSQL when its port is closed, the others still ok', async () => {
    const deadPool = new Pool({
      connectionString: `postgres://postgres@127.0.0.1:${await closedPort()}/postgres`,
      connectionTimeoutMillis: 1000,
    });
    cleanups.push(() => deadPool.end());
    const server = await start({
      port: 0,
      host: '127.0.0.1',
      checks: [natsCheck(nats), postgresCheck(deadPool), redisCheck(redis)],
    });
    const res = await get(server.port, '/readyz');
    const body = JSON.parse(res.body);
    expect([res.status, body.status, body.failing]).toEqual([503, 'unready', ['postgres']]);
    expect(body.checks.postgres.error).toMatch(/^connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
    expect(body.checks.nats.ok).toBe(true);
  });

  it('/readyz names NATS once its connection is closed, and Redis when it stops answering (timeout)', async () => {
    const closedNats = await connectTestNats('granule-observability-closed');
    await closedNats.close();
    // Accepts connections and never answers: PING hangs until the check's timeout.
    const sockets: Socket[] = [];
    const silent: Server = createServer((s) => void sockets.push(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentRedis = new Redis({
      host: '127.0.0.1',
      port: (silent.address() as { port: number }).port,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: true,
    });
    silentRedis.on('error', () => undefined);
    void silentRedis.connect().catch(() => undefined);
    cleanups.push(() => silentRedis.disconnect());
    cleanups.push(() => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => silent.close(resolve));
    });
    const server = await start({
      port: 0,
      host: '127.0.0.1',
      checkTimeoutMs: 300,
      checks: [natsCheck(closedNats), postgresCheck(pool), redisCheck(silentRedis)],
    });
    const body = JSON.parse((await get(server.port, '/readyz')).body);
    expect(body.failing).toEqual(['nats', 'redis']);
    expect(body.checks.nats.error).toBe('connection closed');
    expect(body.checks.redis.error).toBe('timed out after 300 ms');
    expect(body.checks.postgres.ok).toBe(true);
  });

  it('/metrics serves the registry as text/plain version 0.0.4; unknown paths 404, POST 405', async () => {
    const metrics = createMetrics('graph-planner', { runMetrics: false });
    const server = await start({ port: 0, host: '127.0.0.1', checks: [], metrics });
    const res = await get(server.port, '/metrics');
    expect([res.status, res.type]).toEqual([200, 'text/plain; version=0.0.4; charset=utf-8']);
    expect(res.body).toMatch(/^process_resident_memory_bytes\{service="graph-planner"\} \d+$/m);
    expect((await get(server.port, '/nope')).status).toBe(404);
    expect((await get(server.port, '/readyz', 'POST')).status).toBe(405);
  });

  it('a taken port - startHealthServer throws HEALTH_PORT_UNAVAILABLE; serveHealthChecks warns and carries on', async () => {
    const taken = await start({ port: 0, host: '127.0.0.1', checks: [] });
    await expect(startHealthServer({ port: taken.port, host: '127.0.0.1', checks: [] })).rejects.toMatchObject({
      code: 'HEALTH_PORT_UNAVAILABLE',
      message: `cannot serve health checks on 127.0.0.1:${taken.port}: the port is in use — set GRANULE_HEALTH_PORT (0 turns it off)`,
    });
    const warnings: string[] = [];
    expect(
      await serveHealthChecks({ port: taken.port, host: '127.0.0.1', checks: [] }, (m) => warnings.push(m)),
    ).toBeUndefined();
    expect(warnings).toEqual([
      `cannot serve health checks on 127.0.0.1:${taken.port}: the port is in use — set GRANULE_HEALTH_PORT (0 turns it off); running without /healthz, /readyz and /metrics`,
    ]);
    expect(await serveHealthChecks({ port: 0, checks: [] }, (m) => warnings.push(m))).toBeUndefined();
  });
});
