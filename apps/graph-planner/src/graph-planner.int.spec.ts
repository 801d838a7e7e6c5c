import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInbox, type NatsConnection } from '@nats-io/transport-node';
import { transformFileSync } from '@swc/core';
import { parse } from 'yaml';
import { createTestDatabase, type TestDatabase } from '@granule/event-store';
import { executionSubjects } from '@granule/contracts';
import type { PlanReplyMessage, PlanRequestMessage } from '@granule/contracts';
import {
  connectTestNats,
  deleteExecutionStreams,
  ensureInputsBucket,
  StoredInputs,
  testServicesEnv,
  waitUntil,
} from '@granule/messaging';
import { PlanStore, encodePlan, requestPlan } from '@granule/plan-store';
import { buildPlan, cycleDiagnostic, planInstances, PlanCycleError } from '@granule/planner';
import { formatDiagnostic } from '@granule/core';
import { assertNoErrors, parseNodesFile, parseTaskFile } from '@granule/task-model';
import type { TaskDefinition } from '@granule/task-model';
import { GRAPH_PLANNER_MIGRATIONS } from './graph-planner.migrations';

// Nest 12 is ESM-only and jest (Node 20) cannot load it in-process, so the app runs as real
// processes, compiled by swc with the repo's options into a private folder (never dist/, which
// other suites rebuild).
const root = path.join(__dirname, '..', '..', '..');
const { swcOptions } = require(path.join(root, 'tools', 'swc-options.cjs')) as {
  swcOptions: () => Record<string, unknown>;
};
const TASKS_FILE = 'libs/domain/planner/src/__fixtures__/seed-002-deployment_tasks.yaml';
const NODES_FILE = 'libs/domain/planner/src/__fixtures__/seed-002-nodes.yaml';

function compileService(out: string): string {
  const options = swcOptions();
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) return e.name === '__fixtures__' ? [] : walk(full);
      return e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts') && !e.name.endsWith('.d.ts') ? [full] : [];
    });
  const sources = [
    path.join(root, 'apps/graph-planner/src'),
    path.join(root, 'libs/contracts/src'),
    ...['domain', 'application', 'infra'].flatMap((layer) =>
      readdirSync(path.join(root, 'libs', layer)).map((lib) => path.join(root, 'libs', layer, lib, 'src')),
    ),
  ].flatMap((d) => {
    try {
      return walk(d);
    } catch {
      return [];
    }
  });
  for (const file of sources) {
    const target = path.join(out, path.relative(root, file)).replace(/\.ts$/, '.js');
    let code: string;
    try {
      code = transformFileSync(file, { ...options, filename: file, sourceMaps: false }).code;
    } catch {
      continue; // another engineer's half-written file; the service does not load it
    }
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, code);
  }
  return path.join(out, 'apps/graph-planner/src/main.js');
}

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

interface Service {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

describe('graph-planner (real processes, NATS and PostgreSQL)', () => {
  let buildDir: string;
  let main: string;
  let db: TestDatabase;
  let nc: NatsConnection;
  const prefix = `gp_test_${randomBytes(4).toString('hex')}`;
  const subject = executionSubjects(prefix).planner.plan;
  const running: Service[] = [];

  const start = (env: Record<string, string>): Service => {
    const child = spawn(process.execPath, [main], {
      env: {
        PATH: process.env.PATH ?? '',
        NODE_PATH: path.join(root, 'node_modules'),
        // The tests' NATS (tools/setup.sh), as the test harness.
        GRANULE_NATS_URL: testServicesEnv().GRANULE_NATS_URL,
        GRANULE_NATS_CREDS: testServicesEnv().GRANULE_NATS_CREDS,
        GRANULE_SUBJECT_PREFIX: prefix,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
    const service = {
      child,
      stdout: () => out,
      stderr: () => err,
      exited: new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code))),
    };
    running.push(service);
    return service;
  };
  // A graph-planner that exits fails the wait at once; one that times out shows what it printed.
  const ready = async (service: Service, on = subject): Promise<void> => {
    await waitUntil(
      () => {
        if (service.child.exitCode !== null) throw new Error(`graph-planner exited: ${service.stderr()}`);
        return service.stdout().includes(`answering ${on}`);
      },
      `graph-planner to answer on ${on}`,
      30_000,
    ).catch((error: Error) => {
      if (service.child.exitCode !== null) throw error;
      throw new Error(`${error.message}: ${service.stdout()} ${service.stderr()}`);
    });
  };

  const seedTasks = (): TaskDefinition[] =>
    assertNoErrors(parseTaskFile(readFileSync(path.join(root, TASKS_FILE), 'utf8'), TASKS_FILE));
  const seedNodes = parseNodesFile(readFileSync(path.join(root, NODES_FILE), 'utf8'), NODES_FILE).nodes;
  const inlineRequest = (tasks: unknown[], graph = 'default'): PlanRequestMessage => ({
    graph,
    inline: { graphs: { default: tasks }, nodes: seedNodes },
  });
  const ask = (request: PlanRequestMessage): Promise<PlanReplyMessage> => requestPlan(nc, prefix, request, 30_000);
  const planIdOf = (reply: PlanReplyMessage): string => {
    if (!reply.ok) throw new Error(`refused: ${reply.error.message}`);
    return reply.result.planId;
  };
  /** What `granule plan` prints for these tasks (the error's message). */
  const cliError = (tasks: TaskDefinition[]): string => {
    try {
      buildPlan({ tasks, nodes: seedNodes });
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error('expected the plan to fail');
  };

  beforeAll(async () => {
    buildDir = mkdtempSync(path.join(tmpdir(), 'granule-graph-planner-int-'));
    main = compileService(buildDir);
    db = await createTestDatabase('graph_planner', { migrations: GRAPH_PLANNER_MIGRATIONS });
    nc = await connectTestNats('graph-planner-test');
    const replicas = [start({ GRANULE_DATABASE_URL: db.url }), start({ GRANULE_DATABASE_URL: db.url })];
    await Promise.all(replicas.map((replica) => ready(replica)));
  }, 120_000);

  afterAll(async () => {
    for (const s of running) if (s.child.exitCode === null) s.child.kill('SIGTERM');
    await Promise.all(running.map((s) => s.exited));
    if (nc) await deleteExecutionStreams(nc, prefix);
    await nc?.close();
    await db?.drop();
    if (buildDir) rmSync(buildDir, { recursive: true, force: true });
  }, 60_000);

  it('seed 002 inline (normalised task definitions) - stores the plan planInstances(buildPlan(...)) gives', async () => {
    const tasks = seedTasks();
    const reply = await ask(inlineRequest(JSON.parse(JSON.stringify(tasks)) as unknown[]));
    const expected = buildPlan({ tasks, nodes: seedNodes });
    expect(reply).toEqual({
      ok: true,
      result: {
        planId: expect.any(String),
        planHash: encodePlan(expected).hash,
        instances: expected.order.length,
        tasks: expected.tasks.length,
        nodes: ['node-1', 'node-4', 'node-2', 'node-3', 'node-5', 'node-6', 'node-7', 'node-8'],
      },
    });
    const doc = await new PlanStore(db.dataSource).loadDocument(planIdOf(reply));
    expect(doc.instances).toEqual(planInstances(expected));
    const [row] = await db.dataSource.query(`SELECT inputs->>'graph' AS graph FROM granule_plans WHERE id = $1`, [
      planIdOf(reply),
    ]);
    expect(row.graph).toBe('default');
  });

  it('validateOnly - plans and answers, stores nothing; a filter naming no task or node is refused', async () => {
    const tasks = JSON.parse(JSON.stringify(seedTasks())) as unknown[];
    const count = async (): Promise<number> =>
      Number((await db.dataSource.query('SELECT count(*) AS n FROM granule_plans'))[0].n);
    const before = await count();
    const expected = buildPlan({ tasks: seedTasks(), nodes: seedNodes });
    expect(await ask({ ...inlineRequest(tasks), validateOnly: true })).toEqual({
      ok: true,
      result: expect.objectContaining({
        planId: '',
        planHash: encodePlan(expected).hash,
        tasks: expected.tasks.length,
      }),
    });
    const refused = await ask({
      ...inlineRequest(tasks),
      filters: { only: ['no_such_task'], nodes: ['node-99'] },
      validateOnly: true,
    });
    expect(refused).toMatchObject({
      ok: false,
      error: {
        diagnostics: [
          expect.objectContaining({ message: '--only no_such_task: no task has this id' }),
          expect.objectContaining({ message: '--node node-99: no node has this uid' }),
        ],
      },
    });
    expect(await count()).toBe(before);
  });

  it('seed 002 inline (raw Fuel records) - gives the same plan as the parsed file', async () => {
    const records = parse(readFileSync(path.join(root, TASKS_FILE), 'utf8')) as unknown[];
    const reply = await ask(inlineRequest(records));
    expect(reply.ok).toBe(true);
    const doc = await new PlanStore(db.dataSource).loadDocument(planIdOf(reply));
    expect(doc.instances).toEqual(planInstances(buildPlan({ tasks: seedTasks(), nodes: seedNodes })));
  });

  it('inline inputs the CLI stored (inputs) - planned as if sent inline; the stored plan keeps the inputs themselves', async () => {
    await ensureInputsBucket(nc, prefix);
    const tasks = JSON.parse(JSON.stringify(seedTasks())) as unknown[];
    const inline = inlineRequest(tasks).inline;
    const inputs = await new StoredInputs(nc, prefix).put(inline);
    const stored = await ask({ graph: 'default', inputs });
    const direct = await ask(inlineRequest(tasks));
    expect(stored.ok && direct.ok && stored.result.planHash === direct.result.planHash).toBe(true);
    const [row] = await db.dataSource.query(`SELECT inputs FROM granule_plans WHERE id = $1`, [planIdOf(stored)]);
    expect(row.inputs).toEqual({ graph: 'default', inputs, inline });
  });

  it('stored inputs that are gone, or not plan inputs, or given with inline ones - refused, naming what is wrong', async () => {
    await ensureInputsBucket(nc, prefix);
    const gone = { name: '0'.repeat(64), size: 100 };
    expect(await ask({ graph: 'default', inputs: gone })).toEqual({
      ok: false,
      error: {
        code: 'INPUTS_NOT_FOUND',
        message: expect.stringMatching(/^inputs 000000000000… in object store \S+_INPUTS are gone/),
      },
    });
    const notInputs = await new StoredInputs(nc, prefix).put({ graphs: {}, nodes: 'node-1' });
    expect(await ask({ graph: 'default', inputs: notInputs })).toEqual({
      ok: false,
      error: { code: 'PLAN_BAD_REQUEST', message: 'invalid plan request: inputs.nodes must be an array' },
    });
    expect(await ask({ ...inlineRequest([]), inputs: notInputs })).toEqual({
      ok: false,
      error: {
        code: 'PLAN_BAD_REQUEST',
        message: 'invalid plan request: give exactly one of envId, inline inputs, or stored inline inputs (inputs)',
      },
    });
    // A null is a wrong value, not a field left out: it is named, not planned around.
    expect(await ask({ ...inlineRequest([]), validateOnly: null } as unknown as PlanRequestMessage)).toEqual({
      ok: false,
      error: { code: 'PLAN_BAD_REQUEST', message: 'invalid plan request: validateOnly must be a boolean value' },
    });
  });

  it('unknown graph - answers PLAN_UNKNOWN_GRAPH naming the graphs there are', async () => {
    expect(await ask(inlineRequest(seedTasks() as unknown[], 'provisioning'))).toEqual({
      ok: false,
      error: {
        code: 'PLAN_UNKNOWN_GRAPH',
        message: 'graph provisioning: the tasks define no such graph (available: default)',
      },
    });
  });

  it('cycle - answers PLAN_CYCLE with the message granule plan prints, naming the files and lines', async () => {
    const tasks = seedTasks().map((t) =>
      t.id === 'setup_network' ? { ...t, requires: [...t.requires, 'setup_services'] } : t,
    );
    let message = '';
    try {
      buildPlan({ tasks, nodes: seedNodes });
    } catch (err) {
      message = formatDiagnostic(cycleDiagnostic((err as PlanCycleError).cycle, tasks));
    }
    expect(message).toMatch(
      /^\S+\.yaml:\d+: dependency cycle \(each runs before the next\): .*setup_services@node-\d.* -> .*setup_network@node-\d/,
    );
    expect(await ask(inlineRequest(JSON.parse(JSON.stringify(tasks)) as unknown[]))).toEqual({
      ok: false,
      error: { code: 'PLAN_CYCLE', message },
    });
  });

  it('unknown task reference - answers with the file, line and task granule plan names', async () => {
    const tasks = seedTasks().map((t) =>
      t.id === 'setup_services' ? { ...t, requires: [...t.requires, 'setup_storage'] } : t,
    );
    const message = cliError(tasks);
    expect(message).toContain(`${TASKS_FILE}:`);
    expect(message).toContain('setup_storage');
    expect(await ask(inlineRequest(JSON.parse(JSON.stringify(tasks)) as unknown[]))).toEqual({
      ok: false,
      error: { code: 'PLAN_UNKNOWN_TASK', message },
    });
  });

  it('a secret in clear - refused with SECRET_NOT_SEALED naming each, and no plan is stored; sealed ones plan', async () => {
    const [first, ...rest] = seedTasks();
    const withSecret = (env: Record<string, unknown>): TaskDefinition[] => [
      { ...first, parameters: { ...first.parameters, env } },
      ...rest,
    ];
    const before = Number((await db.dataSource.query('SELECT count(*) AS n FROM granule_plans'))[0].n);
    const reply = await ask({
      graph: 'default',
      inline: {
        graphs: { default: JSON.parse(JSON.stringify(withSecret({ DB_PASSWORD: 'clear-pw' }))) as unknown[] },
        nodes: seedNodes,
        cluster: { settings: { access: { admin_token: 'clear-tok' } } },
      },
    });
    expect(reply.ok).toBe(false);
    const error = (reply as Extract<PlanReplyMessage, { ok: false }>).error;
    expect(error.code).toBe('SECRET_NOT_SEALED');
    // Each secret is named at its task's own file and line.
    expect(error.message).toContain(
      `${TASKS_FILE}:${first.source.line}: parameters.env.DB_PASSWORD: task '${first.id}': a secret in clear:`,
    );
    expect(error.message).toContain('inline: settings.access.admin_token: a secret in clear:');
    expect(error.message).not.toMatch(/clear-pw|clear-tok/);
    expect(Number((await db.dataSource.query('SELECT count(*) AS n FROM granule_plans'))[0].n)).toBe(before);
    const sealed = await ask(inlineRequest(withSecret({ DB_PASSWORD: { $sealed: 'Xsender.box' } }) as unknown[]));
    expect(sealed.ok).toBe(true);
  });

  it('bad envelope - answers PLAN_BAD_REQUEST naming the field', async () => {
    expect(
      await ask({ graph: 'default', inline: { graphs: { default: [] }, nodes: 'node-1' as unknown as unknown[] } }),
    ).toEqual({
      ok: false,
      error: { code: 'PLAN_BAD_REQUEST', message: 'invalid plan request: inline.nodes must be an array' },
    });
  });

  it('two replicas in the queue group - each request is answered once, both replicas answer', async () => {
    const tasks = JSON.parse(JSON.stringify(seedTasks())) as unknown[];
    const inbox = createInbox();
    const replies = new Map<string, number>();
    const sub = nc.subscribe(`${inbox}.>`, {
      callback: (_err, msg) => {
        replies.set(msg.subject, (replies.get(msg.subject) ?? 0) + 1);
      },
    });
    const count = 16;
    for (let i = 0; i < count; i++)
      nc.publish(subject, JSON.stringify(inlineRequest(tasks)), { reply: `${inbox}.${i}` });
    await waitUntil(() => replies.size >= count, `answers to all ${count} requests`, 20_000);
    await new Promise((r) => setTimeout(r, 500)); // a second answer would arrive by now
    sub.unsubscribe();
    expect([...replies.values()]).toEqual(Array(count).fill(1));
    const [a, b] = running.slice(0, 2).map((s) => (s.stdout().match(/planned [0-9a-f-]{36}/g) ?? []).length);
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(0);
  });

  it('envId without a config-store - answers CONFIG_STORE_UNAVAILABLE with the hint', async () => {
    expect(await ask({ graph: 'default', envId: 'prod' })).toEqual({
      ok: false,
      error: {
        code: 'CONFIG_STORE_UNAVAILABLE',
        message: `config-store did not answer on ${prefix}.config.env.get: start it with npm run start:config-store`,
      },
    });
  });

  it('requestPlan - nobody listening is a clear error naming the subject', async () => {
    await expect(requestPlan(nc, `${prefix}_nobody`, inlineRequest([]), 2000)).rejects.toMatchObject({
      code: 'PLANNER_UNAVAILABLE',
      message: `graph-planner did not answer on ${prefix}_nobody.planner.plan: start it with npm run start:graph-planner`,
    });
  });

  it('/metrics - counts plans by outcome and planning time; every log line is JSON with the service', async () => {
    const port = await freePort();
    const own = `${prefix}_metrics`;
    const service = start({
      GRANULE_DATABASE_URL: db.url,
      GRANULE_SUBJECT_PREFIX: own,
      GRANULE_HEALTH_PORT: String(port),
    });
    await ready(service, `${own}.planner.plan`);
    const planned = await requestPlan(nc, own, inlineRequest(seedTasks() as unknown as unknown[]), 30_000);
    expect(planned.ok).toBe(true);
    const refused = await requestPlan(nc, own, { graph: 'default' } as PlanRequestMessage, 30_000);
    expect(refused.ok).toBe(false);
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const series = (name: string) =>
      text
        .split('\n')
        .find((l) => l.startsWith(name))
        ?.split(' ')[1];
    expect({
      planned: series('granule_planner_plans_total{outcome="planned",service="graph-planner"}'),
      refused: series('granule_planner_plans_total{outcome="refused",service="graph-planner"}'),
      timed: series('granule_planner_planning_seconds_count{service="graph-planner",outcome="planned"}'),
      runMetrics: text.includes('granule_runs{'),
    }).toEqual({ planned: '1', refused: '1', timed: '1', runMetrics: false });
    const lines = service.stdout().trim().split('\n');
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records.every((r) => r['service'] === 'graph-planner' && typeof r['level'] === 'string')).toBe(true);
    expect(records.some((r) => String(r['msg']).startsWith('planned '))).toBe(true);
    service.child.kill('SIGTERM');
    await service.exited;
  }, 60_000);

  it('wrong database URL - one line on stderr, exit 1', async () => {
    const service = start({ GRANULE_DATABASE_URL: 'postgres://postgres@127.0.0.1:1/granule' });
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toBe(
      'graph-planner: cannot connect to PostgreSQL at postgres://postgres@127.0.0.1:1/granule: connect ECONNREFUSED 127.0.0.1:1 — start it (tools/setup.sh) or set GRANULE_DATABASE_URL\n',
    );
  });

  it('bad configuration - one line naming the variable, exit 1', async () => {
    const service = start({
      GRANULE_DATABASE_URL: db.url,
      GRANULE_SUBJECT_PREFIX: 'not a prefix',
      GRANULE_RUN_MIGRATIONS: 'maybe',
    });
    expect(await service.exited).toBe(1);
    expect(service.stderr()).toBe(
      'graph-planner: invalid configuration: GRANULE_RUN_MIGRATIONS: must be 1 or 0 (got "maybe"); GRANULE_SUBJECT_PREFIX: must be dotted tokens of letters, digits, _ and - (e.g. granule) (got "not a prefix")\n',
    );
  });

  it('migrations - refuses an unmigrated database, migrates it with GRANULE_RUN_MIGRATIONS=1', async () => {
    const empty = await createTestDatabase('graph_planner_empty', { migrations: [] });
    try {
      const refused = start({ GRANULE_DATABASE_URL: empty.url, GRANULE_SUBJECT_PREFIX: `${prefix}_m` });
      expect(await refused.exited).toBe(1);
      expect(refused.stderr()).toBe(
        `graph-planner: the database at ${empty.url} lacks migration PlanStoreSchema1733000000000 — run them (GRANULE_RUN_MIGRATIONS=1, \`npm run migrate\` or the Helm migration job)\n`,
      );
      const migrating = start({
        GRANULE_DATABASE_URL: empty.url,
        GRANULE_SUBJECT_PREFIX: `${prefix}_m`,
        GRANULE_RUN_MIGRATIONS: '1',
      });
      await waitUntil(
        () => migrating.stdout().includes('answering') || migrating.child.exitCode !== null,
        'the migrating graph-planner to answer or exit',
        30_000,
      );
      expect(migrating.stdout()).toContain(`answering ${prefix}_m.planner.plan`);
      const [row] = await empty.dataSource.query(`SELECT to_regclass('granule_plans') IS NOT NULL AS present`);
      expect(row.present).toBe(true);
      migrating.child.kill('SIGTERM');
      expect(await migrating.exited).not.toBe(1);
    } finally {
      await empty.drop();
    }
  }, 60_000);
});
