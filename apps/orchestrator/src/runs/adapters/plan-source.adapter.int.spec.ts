import { randomBytes } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { executionSubjects } from '@granule/contracts';
import { connectTestNats } from '@granule/messaging';
import type { PlanStore } from '@granule/plan-store';
import { StoredPlanSource } from './plan-source.adapter';

describe('StoredPlanSource waiting for a graph-planner (NATS)', () => {
  let nc: NatsConnection;
  const prefix = `plansrc${randomBytes(3).toString('hex')}`;
  const request = { runId: 'r1', graph: 'default', inline: { graphs: {}, nodes: [] } };
  const reply = { ok: true, result: { planId: 'p1', planHash: 'h1', instances: 0, tasks: 0, nodes: [] } };

  beforeAll(async () => {
    nc = await connectTestNats('plan-source.adapter-test');
  });
  afterAll(async () => {
    await nc.close();
  });

  it('a planner that subscribes while the request waits answers it; the wait is said once', async () => {
    const waiting: string[] = [];
    const source = new StoredPlanSource(nc, prefix, {} as PlanStore, {
      waitMs: 10_000,
      retryEveryMs: 200,
      onWaiting: (m, runId) => waiting.push(`${runId}: ${m}`),
    });
    const answered = source.request(request);
    // No planner for a second (restarting, reconnecting after a NATS restart), then one.
    await new Promise((r) => setTimeout(r, 1000));
    const sub = nc.subscribe(executionSubjects(prefix).planner.plan, {
      queue: 'graph-planner',
      max: 1,
      callback: (_err, msg) => void msg.respond(JSON.stringify(reply)),
    });
    expect(await answered).toEqual(reply);
    expect(waiting).toEqual([
      `r1: no graph-planner answers yet (graph-planner did not answer on ${prefix}.planner.plan: start it with npm run start:graph-planner); asking again every 0.2 s for up to 10 s`,
    ]);
    sub.unsubscribe();
  });

  it('no planner within the wait - PLANNER_UNAVAILABLE saying how long it waited', async () => {
    const source = new StoredPlanSource(nc, `${prefix}_none`, {} as PlanStore, { waitMs: 1000, retryEveryMs: 200 });
    const started = Date.now();
    await expect(source.request(request)).rejects.toMatchObject({
      code: 'PLANNER_UNAVAILABLE',
      message: `graph-planner did not answer on ${prefix}_none.planner.plan: start it with npm run start:graph-planner (waited 1 s)`,
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(800);
  });
});

describe('StoredPlanSource plan cache', () => {
  it('keeps at most maxCachedPlans, dropping the least recently used; a dropped plan is read again', async () => {
    const reads: string[] = [];
    const store = {
      streamDocument: async (id: string) => (reads.push(id), { groups: [], concurrency: {} }),
    } as unknown as PlanStore;
    const source = new StoredPlanSource({} as NatsConnection, 'unused', store, { maxCachedPlans: 2 });
    await source.load('a');
    await source.load('b');
    await source.load('a'); // a is now the most recently used
    await source.load('c'); // b goes
    expect(source.cached()).toEqual(['a', 'c']);
    await source.load('b');
    expect(reads).toEqual(['a', 'b', 'c', 'b']);
    expect(source.cached()).toEqual(['c', 'b']);
  });
});
