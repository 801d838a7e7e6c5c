import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import fc from 'fast-check';
import { readPluginSourceFiles } from '@granule/config-store-client';
import { createTestDatabase } from '@granule/event-store';
import type { TestDatabase } from '@granule/event-store';
import { ALL_MIGRATIONS } from './migrations';

// Issue 22's HTTP defects against the built service (`npm run test:e2e` builds first): Nest 12
// is an ES module that jest cannot load in-process, so the HTTP edge is tested as a process.
const root = path.resolve(__dirname, '../../..');
const MAIN = path.join(root, 'dist/apps/config-store/src/main.js');
const RELEASE_DIR = path.join(root, 'examples/releases/example-release');
const TOKEN = `e2e-${randomBytes(12).toString('hex')}`;

interface ErrorBody {
  error: { code: string; message: string; diagnostics?: Array<{ code: string; path?: string; line?: number }> };
}

const bomb = (): string => {
  const lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]'];
  for (let i = 1; i < 7; i++)
    lines.push(
      `a${i}: &a${i} [${Array(9)
        .fill(`*a${i - 1}`)
        .join(',')}]`,
    );
  return `${lines.join('\n')}\n`;
};

describe('config-store HTTP - hostile input (built service, real PostgreSQL and NATS)', () => {
  let db: TestDatabase;
  let service: ChildProcess;
  let stderr = '';
  const prefix = `e2e.${randomBytes(4).toString('hex')}`;
  const port = 20000 + Math.floor(Math.random() * 20000);
  const base = `http://127.0.0.1:${port}`;

  const http = async (method: string, p: string, body?: unknown, raw?: string) => {
    const res = await fetch(`${base}${p}`, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      ...(raw !== undefined ? { body: raw } : body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as unknown };
  };
  const message = (r: { body: unknown }): string => (r.body as ErrorBody).error.message;
  const snapshot = async (): Promise<string> => {
    const tables = [
      'config_releases',
      'config_plugins',
      'config_environments',
      'config_environment_plugins',
      'config_nodes',
      'config_strategies',
    ];
    const rows: unknown[] = [];
    for (const t of tables)
      rows.push(await db.dataSource.query(`SELECT to_jsonb(t) AS row FROM ${t} t ORDER BY 1::text`));
    return JSON.stringify(rows);
  };

  beforeAll(async () => {
    db = await createTestDatabase('config_store_hard_e2e', { migrations: ALL_MIGRATIONS });
    service = spawn(process.execPath, [MAIN], {
      cwd: root,
      env: {
        ...process.env,
        GRANULE_DATABASE_URL: db.url,
        GRANULE_SUBJECT_PREFIX: prefix,
        GRANULE_API_TOKEN: TOKEN,
        GRANULE_HTTP_PORT: String(port),
        GRANULE_HEALTH_PORT: '0',
        GRANULE_PREINSTALLED_RELEASE: '',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    service.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (Date.now() > deadline) throw new Error(`config-store did not start: ${stderr}`);
      if (
        await fetch(`${base}/health`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect((await http('POST', '/releases', await readPluginSourceFiles(RELEASE_DIR))).status).toBe(201);
    expect((await http('POST', '/clusters', { name: 'demo', settings: { a: { b: 1 } } })).status).toBe(201);
  }, 30_000);

  afterAll(async () => {
    if (service && service.exitCode === null) {
      const exited = new Promise((r) => service.once('exit', r));
      service.kill('SIGTERM');
      await exited;
    }
    await db?.drop();
  });

  afterEach(() => {
    // No request may take the service down.
    expect(service.exitCode).toBeNull();
  });

  it('null for a field that may be left out - 400 naming the field, nothing written (it once reached the database: 500)', async () => {
    const cases: [string, string, string, RegExp][] = [
      ['PATCH', '/clusters/demo', '{"name":null}', /^name: expected an environment name .*, got null$/],
      ['PATCH', '/clusters/demo', '{"status":null}', /^status: /],
      ['PATCH', '/clusters/demo', '{"settings":null}', /^settings: /],
      ['PATCH', '/clusters/demo', '{"settings_patch":null}', /^settings_patch: /],
      ['POST', '/clusters', '{"name":"nulls","release":null}', /^release: /],
      ['POST', '/clusters', '{"name":"nulls","plugins":null}', /^plugins: /],
    ];
    for (const [method, route, raw, expected] of cases) {
      const before = await snapshot();
      const r = await http(method, route, undefined, raw);
      expect([method, route, raw, r.status]).toEqual([method, route, raw, 400]);
      expect(message(r)).toMatch(expected);
      expect(await snapshot()).toBe(before);
    }
  });

  it('an id past the database integer - 404 naming what was not found, not a 500 from PostgreSQL', async () => {
    for (const id of ['2147483648', '999999999999999999999']) {
      const cases: [string, string, unknown, string][] = [
        ['GET', `/clusters/${id}`, undefined, `environment '${id}'`],
        ['PATCH', `/clusters/${id}`, { status: 'new' }, `environment '${id}'`],
        ['GET', `/clusters/${id}/graphs/default`, undefined, `environment '${id}'`],
        ['GET', `/nodes?cluster=${id}`, undefined, `environment '${id}'`],
        ['GET', `/releases/${id}`, undefined, `release '${id}'`],
        ['GET', `/plugins/${id}`, undefined, `plugin '${id}'`],
      ];
      for (const [method, route, body, what] of cases) {
        const r = await http(method, route, body);
        expect([method, route, r.status, (r.body as ErrorBody).error.code]).toEqual([
          method,
          route,
          404,
          'CONFIG_NOT_FOUND',
        ]);
        expect(message(r)).toContain(what);
      }
    }
  });

  it('PATCH settings_patch __proto__ - 400 naming the path; the settings and later requests are fine', async () => {
    const r = await http('PATCH', '/clusters/demo', { settings_patch: { '__proto__.polluted': 'yes' } });
    expect([r.status, message(r)]).toEqual([
      400,
      "settings_patch.__proto__.polluted: the keys '__proto__', 'constructor' and 'prototype' are not allowed",
    ]);
    const literal = await http('PATCH', '/clusters/demo', undefined, '{"settings": {"__proto__": {"polluted": 1}}}');
    expect(literal.status).toBe(400);
    const env = await http('GET', '/clusters/demo');
    expect([env.status, (env.body as { settings: unknown }).settings]).toEqual([200, { a: { b: 1 } }]);
    expect((await http('GET', '/releases')).status).toBe(200);
    expect((await http('GET', '/nodes')).status).toBe(200);
  });

  it('a 15 MB label - 400 naming the field, the bound and the size; never stored', async () => {
    const r = await http('POST', '/nodes', { uid: 'big', hostname: 'big', labels: { huge: 'x'.repeat(15_000_000) } });
    expect([r.status, message(r)]).toEqual([400, 'labels: expected at most 16 KiB as JSON, got 14.3 MiB']);
    expect((await http('GET', '/nodes/big')).status).toBe(404);
    expect((await http('GET', '/nodes')).status).toBe(200);
  });

  it('PUT /releases/1/deployment_tasks?graph=probe - writes graph probe, the default graph is kept', async () => {
    const before = (await http('GET', '/releases/1/deployment_tasks')).body as Array<{ id: string }>;
    const probe = [
      { id: 'probe-1', type: 'shell', version: '2.0.0', roles: ['controller'], parameters: { cmd: 'true' } },
    ];
    expect((await http('PUT', '/releases/1/deployment_tasks?graph=probe', probe)).status).toBe(200);
    const after = (await http('GET', '/releases/1/deployment_tasks')).body as Array<{ id: string }>;
    expect(after.map((t) => t.id)).toEqual(before.map((t) => t.id));
    expect(before.length).toBeGreaterThan(1);
    const written = (await http('GET', '/releases/1/deployment_tasks?graph=probe')).body as Array<{ id: string }>;
    expect(written.map((t) => t.id)).toEqual(['probe-1']);
  });

  it("node uids '>' and '*' - 400 with the rule", async () => {
    for (const uid of ['>', '*']) {
      const r = await http('POST', '/nodes', { uid, hostname: 'h' });
      expect([r.status, message(r)]).toEqual([
        400,
        `uid: expected a node uid of 1 to 63 letters, digits, '_' or '-', starting with a letter or digit, got ${JSON.stringify(uid)}`,
      ]);
    }
  });

  it('a YAML alias bomb in a strategy - 400 with the file and line, not 500', async () => {
    const r = await http('POST', '/strategies', { name: 'bomb', document: bomb(), file: 'bomb.yaml' });
    expect([r.status, message(r)]).toEqual([
      400,
      'bomb.yaml:7: aliases here expand the document to 6,053,451 nodes; the bound is 1,000,000 (an alias bomb?)',
    ]);
  });

  it('a 50,000-deep JSON body - 400 INPUT_TOO_DEEP, not a 500 stack overflow', async () => {
    const deep = `{"settings": ${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}}`;
    const r = await http('PATCH', '/clusters/demo', undefined, deep);
    expect([r.status, (r.body as ErrorBody).error.diagnostics?.[0]]).toEqual([
      400,
      expect.objectContaining({ code: 'INPUT_TOO_DEEP', path: 'body', line: 1 }),
    ]);
    const arrays = await http('POST', '/nodes', undefined, '['.repeat(50_000) + ']'.repeat(50_000));
    expect(arrays.status).toBe(400);
  });

  it('a body over 16 MiB - 413 naming the bound and the size; broken JSON is never echoed', async () => {
    const r = await http('POST', '/nodes', { uid: 'x', hostname: 'y'.repeat(17 * 1024 * 1024) });
    expect([r.status, message(r)]).toEqual([
      413,
      'body: the request body is too large: expected at most 16 MiB, got 17 MiB',
    ]);
    const broken = await http('POST', '/nodes', undefined, '{"uid": "secret-token-value');
    expect([broken.status, (broken.body as ErrorBody).error.diagnostics?.[0].code]).toEqual([400, 'INPUT_NOT_JSON']);
    expect(JSON.stringify(broken.body)).not.toContain('secret-token-value');
  });

  it('generated bodies on every route - never a 500, a refusal writes nothing, the service stays up (property)', async () => {
    const routes: Array<[string, string]> = [
      ['POST', '/releases'],
      ['PUT', '/releases/1/deployment_tasks?graph=prop'],
      ['POST', '/plugins'],
      ['POST', '/clusters'],
      ['PATCH', '/clusters/demo'],
      ['POST', '/clusters/demo/plugins'],
      ['PUT', '/clusters/demo/deployment_tasks'],
      ['POST', '/nodes'],
      ['PATCH', '/nodes/lab'],
      ['PUT', '/nodes/lab/assignment'],
      ['POST', '/strategies'],
    ];
    const key = fc.oneof(
      fc.constantFrom('__proto__', 'constructor', 'settings_patch', 'labels', 'uid', 'name'),
      fc.string(),
    );
    const json = fc.letrec<{ v: unknown }>((tie) => ({
      v: fc.oneof(
        { depthSize: 'small' },
        fc.jsonValue({ maxDepth: 2 }),
        fc.dictionary(key, tie('v'), { maxKeys: 4 }),
        fc.array(tie('v'), { maxLength: 3 }),
      ),
    })).v;
    const body = fc.oneof(
      json.map((v) => JSON.stringify(v) ?? 'null'),
      fc.string(),
      fc.constantFrom('{', '[[[[', '{"a":1}}', '\u0000', '{"uid": "\u0000"}'),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), body, async ([method, route], raw) => {
        const before = await snapshot();
        const r = await http(method, route, undefined, raw).catch((err: Error) => ({ status: 0, body: err.message }));
        expect([method, route, r.status < 500 && r.status > 0]).toEqual([method, route, true]);
        if (r.status >= 400) expect(await snapshot()).toBe(before);
      }),
      { numRuns: 150 },
    );
    expect(service.exitCode).toBeNull();
    expect((await http('GET', '/releases')).status).toBe(200);
  }, 60_000);
});
