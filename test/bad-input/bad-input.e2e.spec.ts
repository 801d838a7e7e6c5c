import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { readPluginSourceFiles } from '@granule/config-store-client';
import { createTestDatabase } from '@granule/event-store';
import type { TestDatabase } from '@granule/event-store';
import { BAD_INPUT_CASES } from './bad-input.cases';
import type { AgentCase, CliCase, HttpCase, NatsCase } from './bad-input.cases';

// The CLI, agent, NATS and HTTP rows of the bad-input table (docs/bad-input.md), against the
// built processes (`npm run test:e2e` builds first) on the machine's PostgreSQL and NATS.
const root = path.resolve(__dirname, '../..');
const DIST = path.join(root, 'dist/apps');
const CONFIG_STORE = path.join(DIST, 'config-store/src/main.js');
const RELEASE_DIR = path.join(root, 'examples/releases/example-release');
const TOKEN = `bad-input-${randomBytes(12).toString('hex')}`;

function run(
  args: string[],
  options: { cwd: string; env?: Record<string, string> },
): Promise<{ exit: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      { cwd: options.cwd, env: { ...process.env, ...options.env }, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => resolve({ exit: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const casesOf = <K extends string>(kind: K) =>
  BAD_INPUT_CASES.filter((c) => c.run.kind === kind).map((c) => [`${c.input} (${c.where})`, c.run] as const);
// eslint-disable-next-line no-control-regex -- what must never reach a terminal
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;

describe('bad input - the CLI and the agent (built processes)', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'granule-bad-input-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each(casesOf('cli'))('%s', async (_name, r) => {
    const c = r as CliCase;
    for (const f of c.files) await writeFile(path.join(dir, f.name), f.bytes ? Buffer.from(f.bytes) : (f.text ?? ''));
    // env set would talk to NATS after its checks: a prefix nobody serves keeps it harmless.
    const result = await run([path.join(DIST, 'cli/src/main.js'), ...c.args], {
      cwd: dir,
      env: { GRANULE_SUBJECT_PREFIX: `nobody.${randomBytes(4).toString('hex')}`, XDG_CONFIG_HOME: dir },
    });
    expect({ exit: result.exit, stderr: result.stderr.split('\n').filter(Boolean) }).toEqual({
      exit: c.exit,
      stderr: c.stderr,
    });
    expect(result.stderr).not.toMatch(CONTROL);
    expect(result.stdout).not.toMatch(CONTROL);
  });

  it.each(casesOf('agent'))('%s', async (_name, r) => {
    const c = r as AgentCase;
    const result = await run([path.join(DIST, 'node-agent/src/main.js')], {
      cwd: dir,
      env: { GRANULE_NODE_UID: c.uid, GRANULE_ROOT: dir, GRANULE_AGENT_ADDRESS: '10.0.0.7' },
    });
    expect([result.exit, result.stderr.trim()]).toEqual([1, c.stderr]);
  });
});

describe('bad input - the config-store over NATS and HTTP (built service)', () => {
  let db: TestDatabase;
  let service: ChildProcess;
  let nc: NatsConnection;
  let stderr = '';
  const prefix = `e2e.${randomBytes(4).toString('hex')}`;
  const port = 20000 + Math.floor(Math.random() * 20000);
  const base = `http://127.0.0.1:${port}`;

  beforeAll(async () => {
    db = await createTestDatabase('bad_input_e2e', { migrations: [] });
    service = spawn(process.execPath, [CONFIG_STORE], {
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
    service.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (Date.now() > deadline) throw new Error(`config-store did not start: ${stderr}`);
      if (
        await fetch(`${base}/health`).then(
          (res) => res.ok,
          () => false,
        )
      )
        break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    nc = await connect({ servers: '127.0.0.1:4222' });
    const install = await nc.request(
      `${prefix}.config.release.install`,
      JSON.stringify(await readPluginSourceFiles(RELEASE_DIR)),
      { timeout: 10_000 },
    );
    expect((install.json() as { ok: boolean }).ok).toBe(true);
    const env = await nc.request(`${prefix}.config.env.create`, JSON.stringify({ name: 'demo' }), { timeout: 10_000 });
    expect((env.json() as { ok: boolean }).ok).toBe(true);
  }, 30_000);

  afterAll(async () => {
    await nc?.drain();
    if (service && service.exitCode === null) {
      const exited = new Promise((resolve) => service.once('exit', resolve));
      service.kill('SIGTERM');
      await exited;
    }
    await db?.drop();
  });

  afterEach(() => expect(service.exitCode).toBeNull());

  it.each(casesOf('nats'))('%s', async (_name, r) => {
    const c = r as NatsCase;
    const reply = await nc.request(`${prefix}.config.${c.op}`, JSON.stringify(c.payload()), { timeout: 10_000 });
    expect(reply.json()).toMatchObject({ ok: false, error: { code: c.code, message: c.message } });
  });

  it.each(casesOf('http'))('%s', async (_name, r) => {
    const c = r as HttpCase;
    const res = await fetch(`${base}${c.path}`, {
      method: c.method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: c.body(),
    });
    const body = (await res.json()) as { error: { message: string } };
    expect([res.status, body.error.message]).toEqual([c.status, c.message]);
  });
});
