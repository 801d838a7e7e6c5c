import { stringify } from 'yaml';
import { createTestDatabase, EVENT_STORE_MIGRATIONS, EventStore, type TestDatabase } from '@granule/event-store';
import { MAX_REPLY_MESSAGES, type RunGraphReply, type RunGraphRequest } from '@granule/contracts';
import { buildPlan, type PlanInstance } from '@granule/planner';
import { PLAN_STORE_MIGRATIONS, PlanStore } from '@granule/plan-store';
import { assertNoErrors, parseTaskFile, type NodeSpec } from '@granule/task-model';
import { StoredPlanSource } from './adapters/plan-source.adapter';
import { PostgresRunEventLog } from './adapters/run-event-log.adapter';
import { RunQueries } from './run-queries';

/** 40 chained shell tasks on every node: 300 nodes make a plan of some 12,000 instances. */
const TASKS = assertNoErrors(
  parseTaskFile(
    stringify(
      Array.from({ length: 40 }, (_, i) => ({
        id: `task-${i}`,
        type: 'shell',
        version: '2.0.0',
        roles: '*',
        requires: i ? [`task-${i - 1}`] : [],
        parameters: { cmd: `echo task ${i}`, timeout: 300 },
      })),
    ),
    'deployment_tasks.yaml',
  ),
);
const nodes = (count: number): NodeSpec[] =>
  Array.from({ length: count }, (_, i) => ({ uid: `node-${i + 1}`, roles: [i % 2 ? 'compute' : 'controller'] }));

describe('RunQueries.graph - a plan read page by page (PostgreSQL)', () => {
  let db: TestDatabase;
  let plans: PlanStore;
  let queries: RunQueries;
  let planId: string;
  let all: PlanInstance[];
  let done: PlanInstance;
  const maxPayload = 1024 * 1024;

  beforeAll(async () => {
    db = await createTestDatabase('run_graph', { migrations: [...EVENT_STORE_MIGRATIONS, ...PLAN_STORE_MIGRATIONS] });
    plans = new PlanStore(db.dataSource);
    const events = new EventStore(db.dataSource);
    queries = new RunQueries(events, new StoredPlanSource({} as never, 'unused', plans), plans, {
      info: { max_payload: maxPayload } as never,
    });
    planId = (await plans.save(buildPlan({ tasks: TASKS, nodes: nodes(300) }))).planId;
    all = (await plans.loadDocument(planId)).instances;
    const log = new PostgresRunEventLog(events);
    const at = new Date().toISOString();
    done = all.find((i) => i.node === 'node-7' && i.task === 'task-0') as PlanInstance;
    await log.append(
      'r1',
      [
        { type: 'DeploymentRequested', data: { runId: 'r1', graph: 'default', dryRun: false, noop: false } },
        {
          type: 'PlanAccepted',
          data: { planId, planHash: 'h', instances: all.length, nodes: nodes(300).map((n) => n.uid) },
        } as never,
        {
          type: 'TaskSucceeded',
          data: { key: `${done.task}@${done.node}`, attempt: 1, exitCode: 0, durationMs: 1, outputTail: '', at },
        } as never,
      ],
      0,
    );
    await log.append(
      'refused',
      [
        { type: 'DeploymentRequested', data: { runId: 'refused', graph: 'default', dryRun: false, noop: false } },
      ] as never,
      0,
    );
  });
  afterAll(() => db?.drop());

  /** Every page, in order, as the CLI reads them. */
  async function readAll(request: RunGraphRequest): Promise<RunGraphReply[]> {
    const pages: RunGraphReply[] = [];
    let cursor: string | undefined;
    do {
      const page = await queries.graph(cursor === undefined ? request : { ...request, cursor });
      pages.push(page);
      cursor = page.next;
    } while (cursor !== undefined);
    return pages;
  }

  it('the stored plan is large: more instances than one small page holds', () => {
    expect(all.length).toBeGreaterThan(12_000);
  });

  it('pages of at most the byte budget make the whole plan in order; only the last has total and no next', async () => {
    queries.graphPageBytes = 64 * 1024;
    try {
      const pages = await readAll({ planId });
      expect(pages.length).toBeGreaterThan(5);
      expect(pages.flatMap((p) => p.instances)).toEqual(all);
      for (const page of pages.slice(0, -1)) {
        expect(page.total).toBeUndefined();
        // A page stops at the budget, give or take the one instance that crossed it.
        expect(JSON.stringify(page.instances).length).toBeLessThan(64 * 1024 + 4096);
      }
      expect(pages.at(-1)).toMatchObject({ total: all.length });
      expect(pages.at(-1)?.next).toBeUndefined();
    } finally {
      queries.graphPageBytes = 8 * 1024 * 1024;
    }
  });

  it('limit - pages of that many instances; a last page that is exactly full still ends the plan', async () => {
    const limit = 1000;
    const pages = await readAll({ planId, limit });
    expect(pages.map((p) => p.instances.length)).toEqual([
      ...Array(Math.floor(all.length / limit)).fill(limit),
      ...(all.length % limit ? [all.length % limit] : []),
    ]);
    expect(pages.flatMap((p) => p.instances)).toEqual(all);
    const exact = await queries.graph({ planId, cursor: `${all.length - 10}.${planId}`, limit: 10 });
    expect(exact).toEqual({ instances: all.slice(-10), total: all.length });
  });

  it("default budget - 8 MiB, or half of what 64 messages carry at the server's max_payload", async () => {
    expect((await queries.graph({ planId })).instances).toEqual(all); // some 3 MiB: one page
    const small = new RunQueries(new EventStore(db.dataSource), new StoredPlanSource({} as never, 'u', plans), plans, {
      info: { max_payload: 1024 } as never,
    });
    const first = await small.graph({ planId });
    const bytes = JSON.stringify(first.instances).length;
    expect(bytes).toBeLessThan((1024 * MAX_REPLY_MESSAGES) / 2 + 1024);
    expect(bytes).toBeGreaterThan((1024 * MAX_REPLY_MESSAGES) / 2 - 1024);
    expect(first.next).toBe(`${first.instances.length}.${planId}`);
  });

  it("a run's pages carry the statuses of their own instances only", async () => {
    const pages = await readAll({ runId: 'r1', limit: 500 });
    expect(pages.flatMap((p) => p.instances)).toEqual(all);
    for (const page of pages)
      expect(Object.keys(page.statuses ?? {}).sort()).toEqual(page.instances.map((i) => `${i.task}@${i.node}`).sort());
    const statuses = Object.assign({}, ...pages.map((p) => p.statuses)) as Record<string, string>;
    expect(statuses[`${done.task}@node-7`]).toBe('succeeded');
    expect(statuses[`${done.task}@node-8`]).not.toBe('succeeded');
    expect(statuses['task-1@node-7']).not.toBe('succeeded');
  });

  it('bad cursors and limits - a clear error naming what was expected and what came', async () => {
    await expect(queries.graph({ planId, cursor: 'xyz' })).rejects.toThrow(
      'cursor: expected a page cursor as a previous reply\'s next gives it, got "xyz"',
    );
    await expect(queries.graph({ planId, cursor: '5.another-plan' })).rejects.toThrow(
      `cursor: it pages plan another-plan, not this graph's plan ${planId}`,
    );
    await expect(queries.graph({ planId, cursor: `${all.length + 5}.${planId}` })).rejects.toThrow(
      `cursor: the plan has ${all.length} instances: no page starts at ${all.length + 5}`,
    );
    await expect(queries.graph({ planId, limit: 0 })).rejects.toThrow(
      'limit: expected a whole number from 1 to 100000, got 0',
    );
    await expect(queries.graph({ runId: 'refused' })).rejects.toMatchObject({ code: 'RUN_NO_PLAN' });
  });

  it('a cursor at the very end - an empty last page, not an error', async () => {
    expect(await queries.graph({ planId, cursor: `${all.length}.${planId}` })).toEqual({
      instances: [],
      total: all.length,
    });
  });
});
