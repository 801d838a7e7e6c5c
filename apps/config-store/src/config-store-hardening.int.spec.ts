import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { parse, stringify } from 'yaml';
import { connectTestNats } from '@granule/messaging';
import type { NatsConnection } from '@nats-io/transport-node';
import { readPluginSourceFiles } from '@granule/config-store-client';
import type { TestDatabase } from '@granule/event-store';
import type { ConfigStoreRuntime } from './config-store.runtime';
import { EnvironmentEntity, NodeEntity, ReleaseEntity } from './persistence/config-store.entities';
import { startTestConfigStore } from './testing/test-config-store';

const root = path.resolve(__dirname, '../../..');
const RELEASE_DIR = path.join(root, 'examples/releases/example-release');

export interface ErrorBody {
  error: { code: string; message: string; diagnostics?: Array<{ code: string; path?: string; line?: number }> };
}

export const bomb = (): string => {
  const lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]'];
  for (let i = 1; i < 7; i++)
    lines.push(
      `a${i}: &a${i} [${Array(9)
        .fill(`*a${i - 1}`)
        .join(',')}]`,
    );
  return `${lines.join('\n')}\n`;
};

// Regression tests of issue 22's defects over NATS, on a real PostgreSQL and NATS (the HTTP side,
// which needs the built service, is config-store-hardening.e2e.spec.ts).
describe('config-store - hostile input over NATS (real PostgreSQL and NATS)', () => {
  let db: TestDatabase;
  let runtime: ConfigStoreRuntime;
  let nc: NatsConnection;
  const prefix = `test.${randomBytes(4).toString('hex')}`;

  const nats = async (op: string, payload: unknown) =>
    (await nc.request(`${prefix}.config.${op}`, JSON.stringify(payload), { timeout: 10_000 })).json() as
      { ok: true; data: unknown } | ({ ok: false } & ErrorBody);

  beforeAll(async () => {
    ({ db, runtime } = await startTestConfigStore('config_store_hard', { prefix }));
    nc = await connectTestNats('config-store-hardening-test');
    const ok = await nats('release.install', await readPluginSourceFiles(RELEASE_DIR));
    expect(ok.ok).toBe(true);
    expect((await nats('env.create', { name: 'demo', settings: { a: { b: 1 } } })).ok).toBe(true);
  });

  afterAll(async () => {
    await nc?.drain();
    await runtime?.stop();
    await db?.drop();
  });

  it('settings __proto__ over NATS - refused by path; Object.prototype and the settings stay untouched', async () => {
    const patch = await nats('env.update', { id: 'demo', settings_patch: { '__proto__.polluted': 'yes' } });
    expect(patch).toMatchObject({
      ok: false,
      error: {
        code: 'INVALID_INPUT',
        message:
          "settings_patch.__proto__.polluted: the keys '__proto__', 'constructor' and 'prototype' are not allowed",
      },
    });
    // JSON.parse makes `__proto__` an own key: the same key inside a settings object is refused too.
    const literal = await nc.request(
      `${prefix}.config.env.update`,
      '{"id": "demo", "settings": {"__proto__": {"polluted": 1}}}',
    );
    expect(literal.json()).toMatchObject({
      ok: false,
      error: { diagnostics: [{ code: 'INPUT_FORBIDDEN_KEY', path: 'settings.__proto__' }] },
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const env = await db.dataSource.getRepository(EnvironmentEntity).findOneByOrFail({ name: 'demo' });
    expect(env.settings).toEqual({ a: { b: 1 } });
    // Later calls still work (the pollution used to break every entity read).
    expect((await nats('release.list', {})).ok).toBe(true);
  });

  it('labels that grow past the bound one update at a time - the update is refused, node list still answers', async () => {
    expect((await nats('node.add', { uid: 'lab', hostname: 'lab' })).ok).toBe(true);
    const value = 'v'.repeat(1000);
    for (let i = 0; i < 17; i++)
      expect((await nats('node.update', { uid: 'lab', labels: { [`k${i}`]: value } })).ok).toBe(i < 16);
    const long = await nats('node.update', { uid: 'lab', labels: { one: 'x'.repeat(600 * 1024) } });
    expect(long).toMatchObject({
      ok: false,
      error: { message: 'labels: expected at most 16 KiB as JSON, got 600 KiB' },
    });
    const node = await db.dataSource.getRepository(NodeEntity).findOneByOrFail({ uid: 'lab' });
    expect(Object.keys(node.labels)).toHaveLength(16);
    expect((await nats('node.list', {})).ok).toBe(true);
  });

  it("node uids '>' and '*' - refused with the rule; nothing stored", async () => {
    const rule = "1 to 63 letters, digits, '_' or '-', starting with a letter or digit";
    for (const uid of ['>', '*', 'web.1'])
      expect(await nats('node.add', { uid, hostname: 'h' })).toMatchObject({
        ok: false,
        error: { code: 'INVALID_INPUT', message: `uid: expected a node uid of ${rule}, got ${JSON.stringify(uid)}` },
      });
    expect(await db.dataSource.getRepository(NodeEntity).countBy({ uid: '>' })).toBe(0);
  });

  it('a YAML alias bomb in a strategy - INVALID_INPUT with the line, not INTERNAL', async () => {
    expect(await nats('strategy.upload', { name: 'bomb', document: bomb(), file: 'bomb.yaml' })).toMatchObject({
      ok: false,
      error: {
        code: 'INVALID_INPUT',
        message:
          'bomb.yaml:7: aliases here expand the document to 6,053,451 nodes; the bound is 1,000,000 (an alias bomb?)',
        diagnostics: [{ code: 'YAML_TOO_MANY_ALIASES', line: 7 }],
      },
    });
  });

  it('a payload nested 2,000 deep - INPUT_TOO_DEEP, not a stack overflow', async () => {
    let nested: unknown = 1;
    for (let i = 0; i < 2_000; i++) nested = { a: nested };
    expect(await nats('env.update', { id: 'demo', settings: nested })).toMatchObject({
      ok: false,
      // The transport refuses it before anything parses it into objects.
      error: {
        code: 'INVALID_INPUT',
        diagnostics: [{ code: 'INPUT_TOO_DEEP', message: expect.stringContaining('nested deeper than 64 levels') }],
      },
    });
  });

  it('a task upload over the bound - refused naming the bound and the count', async () => {
    const tasks = Array.from({ length: 5_001 }, (_, i) => ({ id: `t${i}`, type: 'skipped' }));
    expect(await nats('tasks.put', { scope: 'release', id: '1', graph: 'big', tasks })).toMatchObject({
      ok: false,
      error: { message: 'tasks: expected at most 5000 tasks, got 5001 tasks' },
    });
  });

  it('a release whose attributes are over the bound - refused at install, nothing stored', async () => {
    const body = await readPluginSourceFiles(RELEASE_DIR);
    const meta = parse(body.files['metadata.yaml']) as { releases: Record<string, unknown>[] };
    meta.releases[0] = { ...meta.releases[0], release_name: 'fat-release', notes: 'x'.repeat(300 * 1024) };
    body.files['metadata.yaml'] = stringify(meta);
    expect(await nats('release.install', body)).toMatchObject({
      ok: false,
      error: {
        code: 'INVALID_INPUT',
        message: `${RELEASE_DIR}: releases[0]: the release's attributes: expected at most 256 KiB as JSON, got 300.5 KiB`,
      },
    });
    expect(await db.dataSource.getRepository(ReleaseEntity).countBy({ name: 'fat-release' })).toBe(0);
  });
});
