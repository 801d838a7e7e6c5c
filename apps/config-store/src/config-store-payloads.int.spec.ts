import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { connectTestNats, testServicesEnv } from '@granule/messaging';
import type { NatsConnection } from '@nats-io/transport-node';
import fc from 'fast-check';
import { CONFIG_OPERATIONS } from '@granule/contracts';
import { readPluginSourceFiles } from '@granule/config-store-client';
import { createTestDatabase } from '@granule/event-store';
import type { TestDatabase } from '@granule/event-store';
import { loadConfigStoreConfig } from './config/config.service';
import { startConfigStore } from './config-store.runtime';
import type { ConfigStoreRuntime } from './config-store.runtime';
import { ALL_MIGRATIONS } from './migrations';
import { CONFIG_STORE_ENTITIES } from './persistence/config-store.entities';

// Property (issue 22): generated JSON on every config-store operation over NATS never yields
// an INTERNAL error or a crash, and a refused request writes nothing. Real PostgreSQL and NATS;
// fast-check prints the seed and the shrunk payload on failure.
const RELEASE_DIR = path.resolve(__dirname, '../../../examples/releases/example-release');
const TABLES = [
  'config_releases',
  'config_plugins',
  'config_environments',
  'config_environment_plugins',
  'config_nodes',
  'config_strategies',
  'config_store_flags',
  'config_node_credentials',
];

const hostileKey = fc.constantFrom(
  '__proto__',
  'constructor',
  'prototype',
  '__proto__.polluted',
  'a..b',
  '',
  'x'.repeat(300),
);
const hostileString = fc.oneof(
  fc.string(),
  fc.constantFrom(
    '>',
    '*',
    'web.1',
    'demo',
    'n1',
    '1',
    'release',
    'environment',
    '\u0000\u001b[2J',
    'x'.repeat(70_000),
  ),
);
const value: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue({ maxDepth: 2 }),
    hostileString,
    fc.dictionary(fc.oneof(hostileKey, fc.string({ maxLength: 8 })), tie('v'), { maxKeys: 4 }),
    fc.array(tie('v'), { maxLength: 4 }),
  ),
})).v;
/** Times at the edges of what JavaScript and PostgreSQL hold, and strings that only look like times. */
const timestamp = fc.oneof(
  hostileString,
  fc.constantFrom(
    '0001-01-01T00:00:00+14:00',
    '9999-12-31T23:59:59-12:00',
    '2026-11-25T10:00:00.123456789Z',
    '2026-11-25T10:00:00Z',
    '2026-02-29T10:00:00Z',
    '2026-11-25T10:00:00+99:99',
  ),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
);
/** Payloads shaped like the API's (known field names, hostile values) and plain random JSON. */
const payload = fc.oneof(
  fc.record(
    {
      id: hostileString,
      uid: hostileString,
      name: hostileString,
      hostname: hostileString,
      environment: hostileString,
      scope: fc.constantFrom('release', 'environment', 'cluster'),
      graph: hostileString,
      settings: value,
      settings_patch: fc.dictionary(fc.oneof(hostileKey, fc.string({ maxLength: 12 })), value, { maxKeys: 3 }),
      labels: fc.dictionary(fc.oneof(hostileKey, fc.string({ maxLength: 12 })), value, { maxKeys: 3 }),
      roles: value,
      tasks: fc.array(value, { maxLength: 4 }),
      document: fc.oneof(
        hostileString,
        fc.constant('groups: [{name: g, critical: false, depends_on: [], selectors: []}]'),
      ),
      files: value,
      source: hostileString,
      identity: hostileString,
      public_key: fc.oneof(hostileString, fc.constant(`U${'A'.repeat(55)}`)),
      issued_at: timestamp,
      expires_at: timestamp,
      revoked_at: timestamp,
    },
    { requiredKeys: [] },
  ),
  value,
);

describe('config-store over NATS - generated payloads (real PostgreSQL and NATS)', () => {
  let db: TestDatabase;
  let runtime: ConfigStoreRuntime;
  let nc: NatsConnection;
  const prefix = `test.${randomBytes(4).toString('hex')}`;
  const internal: unknown[] = [];

  const snapshot = async (): Promise<string> => {
    const parts: unknown[] = [];
    for (const t of TABLES)
      parts.push(await db.dataSource.query(`SELECT to_jsonb(t) AS row FROM ${t} t ORDER BY 1::text`));
    return JSON.stringify(parts);
  };

  beforeAll(async () => {
    db = await createTestDatabase('config_store_props', {
      migrations: ALL_MIGRATIONS,
      entities: CONFIG_STORE_ENTITIES,
    });
    const config = loadConfigStoreConfig({
      ...testServicesEnv(),
      GRANULE_DATABASE_URL: db.url,
      GRANULE_SUBJECT_PREFIX: prefix,
      GRANULE_PREINSTALLED_RELEASE: '',
    });
    runtime = await startConfigStore(config, (message, err) => internal.push([message, String(err)]), {
      logger: false,
    });
    nc = await connectTestNats('config-store-payloads-test');
    const request = async (op: string, body: unknown) =>
      (await nc.request(`${prefix}.config.${op}`, JSON.stringify(body), { timeout: 10_000 })).json() as { ok: boolean };
    expect((await request('release.install', await readPluginSourceFiles(RELEASE_DIR))).ok).toBe(true);
    expect((await request('env.create', { name: 'demo', settings: { a: 1 } })).ok).toBe(true);
    expect((await request('node.add', { uid: 'n1', hostname: 'h1', environment: 'demo' })).ok).toBe(true);
  });

  afterAll(async () => {
    await nc?.drain();
    await runtime?.stop();
    await db?.drop();
  });

  it('no INTERNAL error, no crash; a refused request leaves every table as it was', async () => {
    const ops = CONFIG_OPERATIONS.filter((op) => !op.endsWith('.remove'));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ops), payload, async (op, body) => {
        const before = await snapshot();
        const reply = (
          await nc.request(`${prefix}.config.${op}`, JSON.stringify(body) ?? 'null', { timeout: 10_000 })
        ).json() as { ok: true } | { ok: false; error: { code: string; message: string } };
        if (!reply.ok) {
          expect(reply.error.code).not.toBe('INTERNAL');
          expect(await snapshot()).toBe(before);
        }
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      }),
      { numRuns: 200 },
    );
    expect(internal).toEqual([]);
    const ping = (await nc.request(`${prefix}.config.ping`, '{}', { timeout: 5_000 })).json() as { ok: boolean };
    expect(ping.ok).toBe(true);
  }, 120_000);

  it('bytes that are not JSON - an INVALID_INPUT envelope, never INTERNAL', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...CONFIG_OPERATIONS),
        fc.uint8Array({ minLength: 1, maxLength: 64 }),
        async (op, bytes) => {
          const reply = await nc.request(`${prefix}.config.${op}`, bytes, { timeout: 10_000 });
          let parsed: { ok: boolean; error?: { code: string } } | undefined;
          try {
            parsed = reply.json();
          } catch {
            parsed = undefined;
          }
          expect(parsed).toBeDefined();
          if (parsed && !parsed.ok) expect(parsed.error?.code).not.toBe('INTERNAL');
        },
      ),
      { numRuns: 100 },
    );
  }, 60_000);
});
