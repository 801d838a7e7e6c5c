import { EventStore } from './event-store';
import { EventStoreSchema1732000000000, EventStoreStreamLastEventType1795000000000 } from './event-store-schema.migration';
import { createTestDatabase, type TestDatabase } from './testing/test-database';

describe('EventStoreStreamLastEventType migration (PostgreSQL)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    // A log written before the migration: only the first schema, events inserted as that version of the store did.
    db = await createTestDatabase('es_migration', { migrations: [EventStoreSchema1732000000000] });
    await db.dataSource.query(`INSERT INTO granule_streams (stream_id, stream_type, version) VALUES ('run-old', 'run', 3), ('node-old', 'node', 1)`);
    await db.dataSource.query(
      `INSERT INTO granule_events (stream_id, stream_version, type, data) VALUES
         ('run-old', 1, 'DeploymentRequested', '{}'), ('run-old', 2, 'TaskDispatched', '{}'),
         ('node-old', 1, 'NodeRegistered', '{}'), ('run-old', 3, 'DeploymentFailed', '{}')`,
    );
  });

  afterAll(() => db.drop());

  it("fills every existing stream's last event type from its last event, then appends keep it", async () => {
    const runner = db.dataSource.createQueryRunner();
    try {
      await new EventStoreStreamLastEventType1795000000000().up(runner);
    } finally {
      await runner.release();
    }
    const rows = async () =>
      (await db.dataSource.query(`SELECT stream_id, last_event_type FROM granule_streams ORDER BY stream_id`)) as Array<{ stream_id: string; last_event_type: string }>;
    expect(await rows()).toEqual([
      { stream_id: 'node-old', last_event_type: 'NodeRegistered' },
      { stream_id: 'run-old', last_event_type: 'DeploymentFailed' },
    ]);

    await new EventStore(db.dataSource).appendToStream('run-old', [{ type: 'DeploymentResumed', data: {} }], { expectedVersion: 3 });
    expect((await rows())[1]).toEqual({ stream_id: 'run-old', last_event_type: 'DeploymentResumed' });

    const indexes = (await db.dataSource.query(`SELECT indexname FROM pg_indexes WHERE tablename = 'granule_streams'`)) as Array<{ indexname: string }>;
    expect(indexes.map((i) => i.indexname)).toContain('granule_streams_type_last_event_idx');
  });
});
