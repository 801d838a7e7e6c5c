import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { createTestDatabase, type TestDatabase } from '@granule/event-store';
import { buildPlan, planInstances, writePlanJson } from '@granule/planner';
import type { Plan } from '@granule/planner';
import { assertNoErrors, parseTaskFile } from '@granule/task-model';
import type { NodeSpec } from '@granule/task-model';
import { PLAN_STORE_MIGRATIONS } from './plan-store-schema.migration';
import { decodePlanDocument, decodePlanRange, decodePlanStream, encodePlan } from './plan-encoding';
import { PlanDocumentInvalidError, PlanNotFoundError } from './plan-store.errors';
import { PlanStore } from './plan-store';

const SEED_TASKS_FILE = path.join(__dirname, '../../../domain/planner/src/__fixtures__/seed-002-deployment_tasks.yaml');
const seedTasks = assertNoErrors(parseTaskFile(readFileSync(SEED_TASKS_FILE, 'utf8'), 'deployment_tasks.yaml'));
const ROLES = ['controller', 'cinder', 'network', 'compute', 'compute'];

/** node-1 is the primary controller; the rest cycle through the other roles. */
function nodes(count: number): NodeSpec[] {
  return Array.from({ length: count }, (_, i) => ({
    uid: `node-${i + 1}`,
    roles: [i === 0 ? 'primary-controller' : ROLES[i % ROLES.length]],
  }));
}

function planJson(plan: Plan): string {
  const chunks: string[] = [];
  writePlanJson(plan, (c) => chunks.push(c));
  return chunks.join('');
}

describe('PlanStore (PostgreSQL)', () => {
  let db: TestDatabase;
  let store: PlanStore;
  const small = buildPlan({ tasks: seedTasks, nodes: nodes(8) });

  beforeAll(async () => {
    db = await createTestDatabase('plan_store', { migrations: PLAN_STORE_MIGRATIONS });
    store = new PlanStore(db.dataSource);
  });
  afterAll(async () => db?.drop());

  it('round trip - the loaded document is the plan as planInstances and writePlanJson give it', async () => {
    const saved = await store.save(small, { inputs: { graph: 'default', note: 'audit' } });
    const doc = await store.loadDocument(saved.planId);
    expect(doc.instances).toEqual(planInstances(small));
    expect(doc.groups).toEqual(JSON.parse(JSON.stringify(small.groups)));
    expect(doc.concurrency).toEqual(small.concurrency);
    expect(gunzipSync(await store.loadRaw(saved.planId)).toString('utf8')).toBe(planJson(small));
  });

  it('save - returns the summary and records it with the inputs', async () => {
    const saved = await store.save(small, { inputs: { graph: 'default', nodes: 8 } });
    expect(saved).toEqual({
      planId: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
      planHash: createHash('sha256').update(planJson(small)).digest('hex'),
      instances: small.order.length,
      tasks: small.tasks.length,
      nodes: ['node-1', 'node-2', 'node-3', 'node-4', 'node-5', 'node-6', 'node-7', 'node-8'],
    });
    const [row] = await db.dataSource.query(`SELECT instances, tasks, nodes, inputs FROM granule_plans WHERE id = $1`, [
      saved.planId,
    ]);
    expect(row).toEqual({
      instances: small.order.length,
      tasks: small.tasks.length,
      nodes: saved.nodes,
      inputs: { graph: 'default', nodes: 8 },
    });
    const info = await store.loadSummary(saved.planId);
    expect(info).toMatchObject({ ...saved, storedBytes: (await store.loadRaw(saved.planId)).length });
    expect(info.createdAt).toBeInstanceOf(Date);
  });

  it('hash - the same plan saved twice has one hash and two ids; another plan another hash', async () => {
    const first = await store.save(small);
    const again = await store.save(buildPlan({ tasks: seedTasks, nodes: nodes(8) }));
    const other = await store.save(buildPlan({ tasks: seedTasks, nodes: nodes(9) }));
    expect(again.planHash).toBe(first.planHash);
    expect(again.planId).not.toBe(first.planId);
    expect(other.planHash).not.toBe(first.planHash);
  });

  it('not found - loading an unknown id throws PlanNotFoundError naming the id', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    for (const load of [
      () => store.loadDocument(missing),
      () => store.loadRaw(missing),
      () => store.loadSummary(missing),
    ]) {
      const err = await load().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PlanNotFoundError);
      expect(err).toMatchObject({ code: 'PLAN_NOT_FOUND', message: `plan '${missing}' not found in the plan store` });
    }
  });

  it('a 2,000-node plan saves in several gzip members and loads back whole', async () => {
    const big = buildPlan({ tasks: seedTasks, nodes: nodes(2000) });
    // Small members so this plan spans many of them, as a 10,000-node plan does with the default.
    const chunked = new PlanStore(db.dataSource, { batchBytes: 64 * 1024 });
    const saved = await chunked.save(big);
    expect(saved.nodes).toHaveLength(2000);
    const raw = await chunked.loadRaw(saved.planId);
    const json = planJson(big);
    expect(json.length).toBeGreaterThan(10 * 64 * 1024);
    expect(raw.length).toBeLessThan(json.length / 5);
    const doc = await chunked.loadDocument(saved.planId);
    expect(doc.instances).toHaveLength(big.order.length);
    expect(doc.instances).toEqual(planInstances(big));
    expect(createHash('sha256').update(gunzipSync(raw)).digest('hex')).toBe(saved.planHash);
  });

  it('streamed decode - gives exactly what parsing the whole JSON gave, parameters shared per task', async () => {
    const plan = buildPlan({ tasks: seedTasks, nodes: nodes(40) });
    const encoded = encodePlan(plan, { batchBytes: 16 * 1024 });
    const whole = JSON.parse(gunzipSync(encoded.gzip).toString('utf8')) as unknown;
    const doc = await decodePlanDocument(encoded.gzip);
    expect(doc).toEqual(whole);
    const byTask = new Map<string, unknown>();
    for (const inst of doc.instances) {
      if (inst.type === 'group' || inst.node === 'sync') continue;
      const seen = byTask.get(inst.task);
      if (seen) expect(inst.parameters).toBe(seen);
      else byTask.set(inst.task, inst.parameters);
    }
  });

  it('streamed decode - a plan many times the chunk size comes back whole, lines cut across chunks', async () => {
    const big = buildPlan({ tasks: seedTasks, nodes: nodes(300) });
    const saved = await store.save(big);
    const raw = await store.loadRaw(saved.planId);
    const json = planJson(big);
    // 256 compressed bytes per chunk: lines and multi-byte characters are split at any byte.
    expect(raw.length).toBeGreaterThan(20 * 256);
    expect(json.length).toBeGreaterThan(200 * 1024);
    const seen: number[] = [];
    const trailer = await decodePlanStream(raw, (_inst, i) => seen.push(i), { chunkBytes: 256 });
    expect(seen).toEqual(Array.from({ length: big.order.length }, (_, i) => i));
    const doc = await decodePlanDocument(raw, { chunkBytes: 256 });
    expect(doc).toEqual(JSON.parse(json));
    expect(trailer).toEqual({ groups: doc.groups, concurrency: doc.concurrency });
    const streamed: unknown[] = [];
    const fromStore = await store.streamDocument(saved.planId, (inst) => streamed.push(inst));
    expect({ instances: streamed, ...fromStore }).toEqual(doc);
  }, 60_000);

  it('streamed decode - parameters with newlines, quotes and a "skipped" key survive', async () => {
    const json =
      '{"instances":[\n' +
      '{"task":"t\\"1","node":"n é","type":"shell","stage":"deploy","priority":1,"requires":[],' +
      '"parameters":{"cmd":"a\\nb \\",\\"skipped\\":","x":{"a":1,"skipped":true}},"skipped":false,"plugin":"p"}\n' +
      '],\n"groups":[],\n"concurrency":{"n é":2}}\n';
    expect(await decodePlanDocument(gzipSync(Buffer.from(json)), { chunkBytes: 7 })).toEqual(JSON.parse(json));
  });

  it('streamed decode - bytes that are not a stored plan give PLAN_DOCUMENT_INVALID naming the line', async () => {
    const bad = async (json: string) =>
      decodePlanDocument(gzipSync(Buffer.from(json))).catch((e: unknown) => e as PlanDocumentInvalidError);
    expect(await bad('{"instances": []}')).toMatchObject({
      code: 'PLAN_DOCUMENT_INVALID',
      message: `stored plan is not what encodePlan writes: line 1 expected '{"instances":[', found '{"instances": []}'`,
    });
    expect(await bad('{"instances":[\n{"task":\n],\n"groups":[],\n"concurrency":{}}\n')).toMatchObject({
      code: 'PLAN_DOCUMENT_INVALID',
      message: expect.stringMatching(/^stored plan is not what encodePlan writes: line 2 is not a plan instance/),
    });
    expect(await bad('{"instances":[\n')).toMatchObject({
      message: 'stored plan is not what encodePlan writes: line 1 ends before the instances list is closed',
    });
  });
});

describe('decodePlanRange', () => {
  const plan = buildPlan({ tasks: seedTasks, nodes: nodes(40) });
  const all = planInstances(plan);
  const gzip = encodePlan(plan, { batchBytes: 4096 }).gzip;

  it('reads from an index while take says so, the first always', async () => {
    const seen: number[] = [];
    const range = await decodePlanRange(gzip, 5, (_i, taken) => (seen.push(taken), taken < 3), { chunkBytes: 512 });
    expect(range).toEqual({ instances: all.slice(5, 8), from: 5, end: false });
    expect(seen).toEqual([1, 2, 3]);
    expect((await decodePlanRange(gzip, 0, () => false)).instances).toEqual(all.slice(0, 1));
  });

  it('the end - the last instances with the total; from the very end none; past it PLAN_RANGE_INVALID', async () => {
    const n = all.length;
    expect(await decodePlanRange(gzip, n - 2, () => true)).toEqual({
      instances: all.slice(-2),
      from: n - 2,
      end: true,
      total: n,
    });
    expect(await decodePlanRange(gzip, n, () => true)).toEqual({ instances: [], from: n, end: true, total: n });
    await expect(decodePlanRange(gzip, n + 1, () => true)).rejects.toMatchObject({
      code: 'PLAN_RANGE_INVALID',
      message: `the plan has ${n} instances: no page starts at ${n + 1}`,
    });
  });

  it('an empty plan - one empty last page', async () => {
    const empty = gzipSync(Buffer.from('{"instances":[\n],\n"groups":[],\n"concurrency":{}}\n'));
    expect(await decodePlanRange(empty, 0, () => true)).toEqual({ instances: [], from: 0, end: true, total: 0 });
  });
});
