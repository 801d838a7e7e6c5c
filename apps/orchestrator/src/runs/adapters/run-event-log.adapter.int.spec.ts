import { createTestDatabase, EventStore, type TestDatabase } from '@granule/event-store';
import { PostgresRunEventLog } from './run-event-log.adapter';

describe('PostgresRunEventLog', () => {
  let db: TestDatabase;
  let log: PostgresRunEventLog;

  beforeAll(async () => {
    db = await createTestDatabase('run_event_log');
    const store = new EventStore(db.dataSource);
    log = new PostgresRunEventLog(store);
    await log.append(
      'plain',
      [
        { type: 'DeploymentRequested', data: { runId: 'plain', graph: 'default', dryRun: false, noop: false } },
        { type: 'PlanAccepted', data: { planId: 'p1', planHash: 'h', instances: 1, nodes: ['n1'] } } as never,
      ],
      0,
    );
    await log.append(
      'done',
      [
        { type: 'DeploymentRequested', data: { runId: 'done', graph: 'default', dryRun: false, noop: false } },
        { type: 'DeploymentSucceeded', data: {} } as never,
      ],
      0,
    );
    await log.append(
      'parent',
      [
        {
          type: 'DeploymentRequested',
          data: { runId: 'parent', graph: 'default', strategy: { name: 's' }, dryRun: false, noop: false },
        } as never,
      ],
      0,
    );
    await store.appendToStream('node-n1', [{ type: 'NodeRegistered', data: { uid: 'n1' } }], {
      expectedVersion: 'no_stream',
    });
  });

  afterAll(() => db.drop());

  it('lists the runs whose last event is not terminal, oldest first, each with its first event', async () => {
    const open = await log.openRuns();
    expect(open.map((r) => r.runId)).toEqual(['plain', 'parent']);
    expect(open.map((r) => r.first)).toEqual([
      { type: 'DeploymentRequested', data: { runId: 'plain', graph: 'default', dryRun: false, noop: false } },
      {
        type: 'DeploymentRequested',
        data: { runId: 'parent', graph: 'default', strategy: { name: 's' }, dryRun: false, noop: false },
      },
    ]);
  });

  it('a run leaves the listing with its terminal event', async () => {
    await log.append('plain', [{ type: 'DeploymentFailed', data: {} } as never], 2);
    expect((await log.openRuns()).map((r) => r.runId)).toEqual(['parent']);
  });

  it('a stopped run that is resumed (ResumeDeployment) is listed again, in its original place', async () => {
    await log.append('done', [{ type: 'DeploymentResumed', data: {} } as never], 2);
    expect((await log.openRuns()).map((r) => r.runId)).toEqual(['done', 'parent']);
  });
});
