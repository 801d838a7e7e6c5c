import { EventStore } from './event-store';
import { RUN_DONE_EVENTS, STOPPED_RUN_KEPT_DAYS, lastGlobalPosition, runsThatMayDispatch } from './retention-queries';
import { createTestDatabase, type TestDatabase } from './testing/test-database';

jest.setTimeout(30_000);

// The queries config-store's artifact retention asks the event log (ADR 0026), on PostgreSQL.
let db: TestDatabase;
let events: EventStore;
beforeAll(async () => {
  db = await createTestDatabase('retention_queries');
  events = new EventStore(db.dataSource);
});
afterAll(() => db?.drop());

const append = (stream: string, ...list: { type: string; data?: Record<string, unknown> }[]) =>
  events.appendToStream(
    stream,
    list.map((e) => ({ type: e.type, data: e.data ?? {} })),
    { expectedVersion: 'any' },
  );

describe('lastGlobalPosition', () => {
  it("is '0' on an empty log, then the newest event's position", async () => {
    expect(await lastGlobalPosition(db.dataSource)).toBe('0');
    const { lastGlobalPosition: written } = await append('node-1', { type: 'NodeRegistered' });
    expect(await lastGlobalPosition(db.dataSource)).toBe(String(written));
  });
});

describe('runsThatMayDispatch', () => {
  it('lists runs going on, being planned, queued or stopped with the plans they name; not runs that are done, nor other streams', async () => {
    await append('run-planning', { type: 'DeploymentRequested' });
    await append('run-going', { type: 'DeploymentRequested' }, { type: 'PlanAccepted', data: { planId: 'p-going' } });
    await append(
      'run-queued',
      { type: 'DeploymentRequested' },
      { type: 'DeploymentQueued', data: { plan: { planId: 'p-queued' } } },
      { type: 'DeploymentQueued', data: { plan: { planId: 'p-queued' } } },
    );
    await append(
      'run-stopped',
      { type: 'DeploymentRequested' },
      { type: 'PlanAccepted', data: { planId: 'p-stopped' } },
      { type: 'DeploymentStopped' },
    );
    // A retry is a run of its own naming the plan it reruns.
    await append(
      'run-retry',
      { type: 'DeploymentRequested', data: { retryOf: { runId: 'done', failedOnly: true } } },
      { type: 'PlanAccepted', data: { planId: 'p-done', only: ['a@1'] } },
    );
    await append('run-done', { type: 'DeploymentRequested' }, { type: 'PlanAccepted', data: { planId: 'p-done' } });
    await append('run-done', { type: 'DeploymentFailed' });
    await append('run-resumed-done', { type: 'DeploymentStopped' }, { type: 'DeploymentResumed' });
    await append('run-resumed-done', { type: 'DeploymentSucceeded' });
    await append('run-strategy', { type: 'StrategyAccepted' });
    await append('run-reported', { type: 'StrategyAccepted' }, { type: 'StrategyReported' });
    await append('command-1', { type: 'CommandExpired' });

    expect(await runsThatMayDispatch(db.dataSource)).toEqual([
      { streamId: 'run-going', lastEventType: 'PlanAccepted', planIds: ['p-going'] },
      { streamId: 'run-planning', lastEventType: 'DeploymentRequested', planIds: [] },
      { streamId: 'run-queued', lastEventType: 'DeploymentQueued', planIds: ['p-queued'] },
      { streamId: 'run-retry', lastEventType: 'PlanAccepted', planIds: ['p-done'] },
      { streamId: 'run-stopped', lastEventType: 'DeploymentStopped', planIds: ['p-stopped'] },
      { streamId: 'run-strategy', lastEventType: 'StrategyAccepted', planIds: [] },
    ]);
  });

  it('a run stopped longer ago than the resume window (and a day) is no longer listed; one stopped a day less is', async () => {
    for (const id of ['run-stopped-long-ago', 'run-stopped-lately'])
      await append(
        id,
        { type: 'DeploymentRequested' },
        { type: 'PlanAccepted', data: { planId: `p-${id}` } },
        {
          type: 'DeploymentStopped',
        },
      );
    const stoppedDaysAgo = (id: string, days: number) =>
      db.dataSource.query(
        `UPDATE granule_streams SET updated_at = now() - make_interval(days => $2) WHERE stream_id = $1`,
        [id, days],
      );
    await stoppedDaysAgo('run-stopped-long-ago', STOPPED_RUN_KEPT_DAYS + 1);
    await stoppedDaysAgo('run-stopped-lately', STOPPED_RUN_KEPT_DAYS - 1);
    const listed = (await runsThatMayDispatch(db.dataSource)).map((r) => r.streamId);
    expect([listed.includes('run-stopped-long-ago'), listed.includes('run-stopped-lately')]).toEqual([false, true]);
    expect(STOPPED_RUN_KEPT_DAYS).toBe(31);
  });

  it('a stopped run is resumable, so only the other terminal events and StrategyReported count as done', () => {
    expect([...RUN_DONE_EVENTS].sort()).toEqual([
      'DeploymentExpired',
      'DeploymentFailed',
      'DeploymentRefused',
      'DeploymentSucceeded',
      'StrategyReported',
    ]);
  });
});
