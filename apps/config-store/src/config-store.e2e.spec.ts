import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase } from '@granule/event-store';
import type { TestDatabase } from '@granule/event-store';
import { ALL_MIGRATIONS } from './migrations';

// Runs the built service (`npm run test:e2e` builds first) and the CLI as real processes.
const root = path.resolve(__dirname, '../../..');
const MAIN = path.join(root, 'dist/apps/config-store/src/main.js');
const TOKEN = `e2e-${randomBytes(12).toString('hex')}`;

function run(
  cmd: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: root, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

// Each test starts real processes (the service, the CLI): seconds each on a busy machine.
jest.setTimeout(60_000);

describe('config-store service (built, real processes)', () => {
  let db: TestDatabase;
  let service: ChildProcess;
  const prefix = `e2e.${randomBytes(4).toString('hex')}`;
  const port = 20000 + Math.floor(Math.random() * 20000);
  const base = `http://127.0.0.1:${port}`;
  const cliEnv = { GRANULE_SUBJECT_PREFIX: prefix, XDG_CONFIG_HOME: os.tmpdir() };
  const http = (p: string, init: RequestInit = {}, token: string | null = TOKEN) =>
    fetch(`${base}${p}`, {
      ...init,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
  const cli = (...args: string[]) => run(path.join(root, 'granule'), args, cliEnv);

  beforeAll(async () => {
    db = await createTestDatabase('config_store_e2e', { migrations: ALL_MIGRATIONS });
    service = spawn(process.execPath, [MAIN], {
      cwd: root,
      env: {
        ...process.env,
        GRANULE_DATABASE_URL: db.url,
        GRANULE_SUBJECT_PREFIX: prefix,
        GRANULE_API_TOKEN: TOKEN,
        GRANULE_HTTP_PORT: String(port),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (Date.now() > deadline) throw new Error('config-store did not start');
      const ok = await fetch(`${base}/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 30_000);

  afterAll(async () => {
    if (service && service.exitCode === null) {
      const exited = new Promise((r) => service.once('exit', r));
      service.kill('SIGTERM');
      await exited;
    }
    await db?.drop();
  });

  it('a wrong database URL - one line that says what to do, exit code 1', async () => {
    const r = await run(process.execPath, [MAIN], {
      GRANULE_DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere',
      GRANULE_SUBJECT_PREFIX: prefix,
    });
    expect([r.code, r.stderr]).toEqual([
      1,
      'config-store: cannot connect to PostgreSQL at postgres://postgres@127.0.0.1:1/nowhere: connect ECONNREFUSED 127.0.0.1:1 — start it (tools/setup.sh) or set GRANULE_DATABASE_URL\n',
    ]);
  });

  it('a database without its migrations and GRANULE_RUN_MIGRATIONS=0 - refused in one line naming them, nothing created', async () => {
    const empty = await createTestDatabase('config_store_unmigrated', { migrations: [] });
    try {
      const r = await run(process.execPath, [MAIN], {
        GRANULE_DATABASE_URL: empty.url,
        GRANULE_SUBJECT_PREFIX: prefix,
        GRANULE_RUN_MIGRATIONS: '0',
      });
      const names = ALL_MIGRATIONS.map((m) => m.name).join(', ');
      expect([r.code, r.stderr]).toEqual([
        1,
        `config-store: the database at ${empty.url} lacks migrations ${names} — run them (GRANULE_RUN_MIGRATIONS=1, \`npm run migrate\` or the Helm migration job)\n`,
      ]);
      const tables: Array<{ n: number }> = await empty.dataSource.query(
        `SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'config_%'`,
      );
      expect(tables[0].n).toBe(0);
    } finally {
      await empty.drop();
    }
  });

  it('HTTP - refuses requests without the API token or with a wrong one', async () => {
    const none = await http('/releases', {}, null);
    expect([none.status, await none.json()]).toEqual([
      401,
      {
        error: {
          code: 'UNAUTHORIZED',
          message: 'an API token is required: send Authorization: Bearer <GRANULE_API_TOKEN>',
        },
      },
    ]);
    expect((await http('/releases', {}, `${TOKEN}x`)).status).toBe(401);
  });

  it('HTTP - the basic release is pre-installed; bad input is a 400 naming the field', async () => {
    const releases = (await (await http('/releases')).json()) as { id: number; name: string }[];
    expect(releases.map((r) => [r.id, r.name])).toEqual([[1, 'example-release']]);
    const bad = await http('/clusters', { method: 'POST', body: JSON.stringify({ name: 'prod', release: 7 }) });
    expect([bad.status, ((await bad.json()) as { error: { message: string } }).error.message]).toEqual([
      400,
      'release: must be a string (got 7)',
    ]);
    const unknownQuery = await http('/releases/1/deployment_tasks?from=a');
    expect(unknownQuery.status).toBe(400);
  });

  it("HTTP - GET|PUT deployment_tasks with start / end (and Fuel's start_task / end_task)", async () => {
    const tasks = ['a', 'b', 'c'].map((id, i, all) => ({
      id,
      type: 'shell',
      version: '2.0.0',
      roles: ['controller'],
      requires: [i === 0 ? 'deploy_start' : all[i - 1]],
      required_for: ['deploy_end'],
      parameters: { cmd: 'true' },
    }));
    const put = await http('/releases/1/deployment_tasks', { method: 'PUT', body: JSON.stringify(tasks) });
    expect(put.status).toBe(200);
    const ids = async (q: string) =>
      ((await (await http(`/releases/1/deployment_tasks${q}`)).json()) as { id: string }[]).map((t) => t.id);
    expect(await ids('?start=b')).toEqual(['b', 'c']);
    expect(await ids('?end_task=b&start_task=a')).toEqual(['a', 'b']);
    const created = await http('/clusters', { method: 'POST', body: JSON.stringify({ name: 'web' }) });
    expect(created.status).toBe(201);
    await http('/nodes', { method: 'POST', body: JSON.stringify({ uid: 'n1', hostname: 'h1', environment: 'web' }) });
    await http('/nodes/n1/assignment', {
      method: 'PUT',
      body: JSON.stringify({ environment: 'web', roles: ['controller'] }),
    });
    const cluster = (await (await http('/clusters/web/deployment_tasks?end=b')).json()) as { id: string }[];
    expect(cluster.map((t) => t.id)).toEqual(['a', 'b']);
    const graph = (await (await http('/clusters/web/graphs/provisioning')).json()) as {
      graph: string;
      tasks: { id: string }[];
    };
    expect([graph.graph, graph.tasks.map((t) => t.id)]).toEqual(['provisioning', ['provision-prepare']]);
    const missing = await http('/clusters/nope');
    expect([missing.status, ((await missing.json()) as { error: { code: string } }).error.code]).toEqual([
      404,
      'CONFIG_NOT_FOUND',
    ]);
  });

  it('CLI - drives the service over NATS: plugin install and enable, node add, tasks download', async () => {
    const list = await cli('release', 'list', '-o', 'json');
    expect(list.code).toBe(0);
    expect((JSON.parse(list.stdout) as { name: string }[]).map((r) => r.name)).toEqual(['example-release']);
    expect((await cli('plugin', 'install', 'examples/plugins/example-v5', '-o', 'json')).code).toBe(0);
    expect((await cli('plugin', 'enable', 'example-v5', '--env', 'web')).code).toBe(0);
    const node = await cli('node', 'add', 'n2', '--hostname', 'h2', '--rack', 'r7', '--label', 'zone=b', '-o', 'yaml');
    expect(node.stdout).toContain('rack: r7');
    const dir = await mkdtemp(path.join(os.tmpdir(), 'granule-tasks-'));
    try {
      const dl = await cli('tasks', 'download', '--env', 'web', '--dir', dir, '--start', 'b', '-o', 'json');
      expect(JSON.parse(dl.stdout)).toMatchObject({ scope: 'environment', graph: 'default' });
      expect(await readFile(path.join(dir, 'deployment_tasks.yaml'), 'utf8')).toMatch(/^- id: b\n/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const refused = await cli('env', 'create', 'web');
    expect([refused.code, refused.stderr]).toEqual([1, "error: environment 'web' already exists\n"]);
  });

  it('CLI - says how to start what is missing', async () => {
    const noService = await run(path.join(root, 'granule'), ['env', 'list'], {
      GRANULE_SUBJECT_PREFIX: 'nobody.home',
      XDG_CONFIG_HOME: os.tmpdir(),
    });
    expect([noService.code, noService.stderr]).toEqual([
      1,
      'error: config-store did not answer on nobody.home.config.env.list: start it with npm run start:config-store\n',
    ]);
    const noNats = await cli('env', 'list', '--nats-url', 'nats://127.0.0.1:1');
    expect([noNats.code, noNats.stderr]).toEqual([
      1,
      'error: cannot reach NATS at nats://127.0.0.1:1: connection refused — start it (tools/setup.sh) or set GRANULE_NATS_URL\n',
    ]);
  });
});
