import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { connectTestNats, testServicesEnv } from '@granule/messaging';
import type { NatsConnection } from '@nats-io/transport-node';
import { createTestDatabase, type TestDatabase } from '@granule/event-store';
import { createMetrics, registerRequestMetrics, startHealthServer, type HealthServer } from '@granule/observability';
import { createLogger } from '@granule/service-kit';
import { loadConfigStoreConfig } from './config/config.service';
import { startConfigStore, type ConfigStoreRuntime } from './config-store.runtime';
import { ALL_MIGRATIONS } from './migrations';
import { CONFIG_STORE_ENTITIES } from './persistence/config-store.entities';

const TOKEN = `metrics-${randomBytes(12).toString('hex')}`;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

// The service as main.ts wires it (real PostgreSQL, NATS, HTTP), its /metrics scraped after real requests.
describe('config-store /metrics and log lines (real PostgreSQL, NATS and HTTP)', () => {
  let db: TestDatabase;
  let runtime: ConfigStoreRuntime;
  let health: HealthServer;
  let nc: NatsConnection;
  let base: string;
  const lines: string[] = [];
  const prefix = `test.${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    db = await createTestDatabase('config_store_metrics', {
      migrations: ALL_MIGRATIONS,
      entities: CONFIG_STORE_ENTITIES,
    });
    const httpPort = await freePort();
    base = `http://127.0.0.1:${httpPort}`;
    const config = loadConfigStoreConfig({
      ...testServicesEnv(),
      GRANULE_DATABASE_URL: db.url,
      GRANULE_SUBJECT_PREFIX: prefix,
      GRANULE_PREINSTALLED_RELEASE: '',
      GRANULE_API_TOKEN: TOKEN,
      GRANULE_HTTP_HOST: '127.0.0.1',
      GRANULE_HTTP_PORT: String(httpPort),
    });
    const logger = createLogger('config-store', { destination: { write: (l: string) => lines.push(l) } });
    const metrics = createMetrics('config-store', { runMetrics: false, processMetrics: false });
    runtime = await startConfigStore(config, () => undefined, {
      logger,
      metrics: registerRequestMetrics(metrics.registry),
    });
    await runtime.listenHttp();
    health = await startHealthServer({ port: 0, host: '127.0.0.1', checks: [], metrics });
    nc = await connectTestNats('config-store-metrics-test');
  }, 60_000);

  afterAll(async () => {
    await nc?.drain();
    await health?.close();
    await runtime?.stop();
    await db?.drop();
  });

  it('counts HTTP and NATS requests by route and outcome; log lines are JSON and carry no token', async () => {
    const http = (path: string, token?: string) =>
      fetch(`${base}${path}`, token ? { headers: { authorization: `Bearer ${token}` } } : {}).then((r) => r.status);
    expect(await http('/releases', TOKEN)).toBe(200);
    expect(await http('/nodes/7', TOKEN)).toBe(404);
    expect(await http('/releases')).toBe(401);
    const nats = async (op: string, payload: unknown) =>
      (await nc.request(`${prefix}.config.${op}`, JSON.stringify(payload), { timeout: 10_000 })).json<{
        ok: boolean;
      }>();
    expect((await nats('release.list', {})).ok).toBe(true);
    expect((await nats('env.create', { name: 'prod' })).ok).toBe(false);

    const text = await (await fetch(`http://127.0.0.1:${health.port}/metrics`)).text();
    const counted = text
      .split('\n')
      .filter((l) => l.startsWith('granule_requests_total{'))
      .map((l) => l.replace(/,?service="config-store"/, ''))
      .sort();
    expect(counted).toEqual([
      'granule_requests_total{transport="http",route="GET /nodes/:uid",outcome="refused"} 1',
      'granule_requests_total{transport="http",route="GET /releases",outcome="ok"} 1',
      'granule_requests_total{transport="http",route="GET /releases",outcome="refused"} 1',
      'granule_requests_total{transport="nats",route="config.env.create",outcome="refused"} 1',
      'granule_requests_total{transport="nats",route="config.release.list",outcome="ok"} 1',
    ]);
    expect(text).toContain('granule_request_duration_seconds_count{');

    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records.every((r) => r['service'] === 'config-store')).toBe(true);
    expect(records.filter((r) => r['req']).map((r) => (r['req'] as { url: string }).url)).toEqual(
      expect.arrayContaining(['/releases', '/nodes/7']),
    );
    expect(lines.join('')).not.toContain(TOKEN);
  }, 30_000);
});
