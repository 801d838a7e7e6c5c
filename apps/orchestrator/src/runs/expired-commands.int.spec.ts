import { createTestDatabase, EVENT_STORE_MIGRATIONS, EventStore, type TestDatabase } from '@granule/event-store';
import { PLAN_STORE_MIGRATIONS, PlanStore } from '@granule/plan-store';
import { commandStreamId, type CommandExpired } from '@granule/run-events';
import { StoredPlanSource } from './adapters/plan-source.adapter';
import { PostgresRunEventLog } from './adapters/run-event-log.adapter';
import { RunQueries } from './run-queries';

/** A stop found after its time to live, as the command intake records it (ADR 0021). */
const expiredStop = (commandId: string, runId: string): CommandExpired => ({
  type: 'CommandExpired',
  data: {
    commandId,
    command: 'StopDeployment',
    storedAt: '2026-11-25T10:00:00.000Z',
    ttlSeconds: 1,
    expiredAt: '2026-11-25T10:05:00.000Z',
    runId,
    requestedBy: 'alice',
  },
});

// An expired stop or resume is on a stream of its own; `runs show` and `runs events` find it by
// the run it named, so an operator sees that a stop was asked for and never acted on.
describe('RunQueries - expired commands that named a run (PostgreSQL)', () => {
  let db: TestDatabase;
  let store: EventStore;
  let queries: RunQueries;

  beforeAll(async () => {
    db = await createTestDatabase('run_expired_commands', {
      migrations: [...EVENT_STORE_MIGRATIONS, ...PLAN_STORE_MIGRATIONS],
    });
    const plans = new PlanStore(db.dataSource);
    store = new EventStore(db.dataSource);
    queries = new RunQueries(store, new StoredPlanSource({} as never, 'unused', plans), plans);
    const log = new PostgresRunEventLog(store);
    for (const runId of ['r1', 'r2'])
      await log.append(
        runId,
        [{ type: 'DeploymentRequested', data: { runId, graph: 'default', dryRun: false, noop: false } }] as never,
        0,
      );
    await store.appendToStream(commandStreamId('c1'), [expiredStop('c1', 'r1')], { expectedVersion: 'no_stream' });
    await store.appendToStream(commandStreamId('c2'), [expiredStop('c2', 'r2')], { expectedVersion: 'no_stream' });
    await log.append(
      'r1',
      [{ type: 'DeploymentRefused', data: { reason: 'no nodes', at: new Date().toISOString() } }] as never,
      1,
    );
  });
  afterAll(() => db?.drop());

  it("runs.events - with expiredCommands, the run's expired stop among its events by time; another run's not", async () => {
    const entries = await queries.eventsReply({ runId: 'r1', expiredCommands: true });
    expect(entries.map((e) => ('stream' in e ? e.stream : `#${e.version} ${e.event.type}`))).toEqual([
      '#1 DeploymentRequested',
      'command-c1',
      '#2 DeploymentRefused',
    ]);
    expect(entries[1].event).toEqual(expiredStop('c1', 'r1'));
  });

  it("runs.events - without it, or with a version range, only the run's own numbered events", async () => {
    const asked = [
      { runId: 'r1' },
      { runId: 'r1', after: 1, expiredCommands: true },
      { runId: 'r1', upTo: 2, expiredCommands: true },
    ];
    for (const q of asked) expect((await queries.eventsReply(q)).filter((e) => 'stream' in e)).toEqual([]);
    expect(await queries.eventsReply(asked[2])).toHaveLength(2);
  });

  it('runs.show - the expired commands that named the run, and none at an earlier event (--at)', async () => {
    expect((await queries.show({ runId: 'r1' })).expiredCommands).toEqual([expiredStop('c1', 'r1').data]);
    expect((await queries.show({ runId: 'r2' })).expiredCommands).toEqual([expiredStop('c2', 'r2').data]);
    expect((await queries.show({ runId: 'r1', at: 1 })).expiredCommands).toBeUndefined();
  });
});
