import type { QueryRunner } from 'typeorm';
import { EventStore } from './event-store';
import {
  EventStoreSchema1732000000000,
  EventStoreStreamLastEventType1795000000000,
} from './event-store-schema.migration';
import { createTestDatabase, type TestDatabase } from './testing/test-database';

describe('EventStoreStreamLastEventType migration (PostgreSQL)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    // A log written before the migration: only the first schema, events inserted as that version of the store did.
    db = await createTestDatabase('es_migration', { migrations: [EventStoreSchema1732000000000] });
    await db.dataSource.query(
      `INSERT INTO granule_streams (stream_id, stream_type, version) VALUES ('run-old', 'run', 3), ('node-old', 'node', 1)`,
    );
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
      (await db.dataSource.query(
        `SELECT stream_id, last_event_type FROM granule_streams ORDER BY stream_id`,
      )) as Array<{ stream_id: string; last_event_type: string }>;
    expect(await rows()).toEqual([
      { stream_id: 'node-old', last_event_type: 'NodeRegistered' },
      { stream_id: 'run-old', last_event_type: 'DeploymentFailed' },
    ]);

    await new EventStore(db.dataSource).appendToStream('run-old', [{ type: 'DeploymentResumed', data: {} }], {
      expectedVersion: 3,
    });
    expect((await rows())[1]).toEqual({ stream_id: 'run-old', last_event_type: 'DeploymentResumed' });

    const indexes = (await db.dataSource.query(
      `SELECT indexname FROM pg_indexes WHERE tablename = 'granule_streams'`,
    )) as Array<{ indexname: string }>;
    expect(indexes.map((i) => i.indexname)).toContain('granule_streams_type_last_event_idx');
  });

  it('keeps the column right for writers of the previous release, which do not set it, while the upgrade rolls out', async () => {
    const lastType = async (streamId: string) =>
      (
        (await db.dataSource.query(`SELECT last_event_type FROM granule_streams WHERE stream_id = $1`, [
          streamId,
        ])) as Array<{ last_event_type: string | null }>
      )[0]?.last_event_type;
    // The previous release's one-statement append: claim the row, insert the events; no last_event_type.
    const oldAppend = (streamId: string, types: string[], expected: number | 'new') =>
      db.dataSource.query(
        `WITH claimed AS (${
          expected === 'new'
            ? `INSERT INTO granule_streams (stream_id, stream_type, version) VALUES ($1, 'run', $2) ON CONFLICT (stream_id) DO NOTHING RETURNING version`
            : `UPDATE granule_streams SET version = version + $2, updated_at = now() WHERE stream_id = $1 AND version = ${expected} RETURNING version`
        })
         INSERT INTO granule_events (stream_id, stream_version, type, data)
         SELECT $1, c.version - $2 + e.ord, e.type, '{}' FROM claimed c CROSS JOIN unnest($3::text[]) WITH ORDINALITY AS e(type, ord)`,
        [streamId, types.length, types],
      );

    await oldAppend('run-during-upgrade', ['DeploymentRequested', 'PlanAccepted'], 'new');
    expect(await lastType('run-during-upgrade')).toBe('PlanAccepted');
    await oldAppend('run-during-upgrade', ['TaskDispatched', 'DeploymentSucceeded'], 2);
    expect(await lastType('run-during-upgrade')).toBe('DeploymentSucceeded');
    await oldAppend('run-old', ['DeploymentStopped'], 4); // run-old is at 4 after the first test
    expect(await lastType('run-old')).toBe('DeploymentStopped');

    // A current writer's rows are already right: the trigger rewrites nothing (one row update,
    // the claim's, where the previous release's append costs two).
    const updatesIn = async (append: (runner: QueryRunner) => Promise<unknown>) => {
      const runner = db.dataSource.createQueryRunner();
      try {
        // The backend's count may still hold earlier transactions' updates: take the difference.
        const updated = async () =>
          Number(
            (
              (await runner.query(
                `SELECT pg_stat_get_xact_tuples_updated('granule_streams'::regclass)::text AS n`,
              )) as Array<{ n: string }>
            )[0].n,
          );
        await runner.startTransaction();
        const before = await updated();
        await append(runner);
        const after = await updated();
        await runner.commitTransaction();
        return after - before;
      } finally {
        await runner.release();
      }
    };
    const store = new EventStore(db.dataSource);
    expect(
      await updatesIn((runner) =>
        store.appendToStream('run-old', [{ type: 'DeploymentResumed', data: {} }], {
          expectedVersion: 5,
          queryRunner: runner,
        }),
      ),
    ).toBe(1);
    expect(
      await updatesIn((runner) =>
        runner.query(
          `WITH claimed AS (UPDATE granule_streams SET version = version + 1 WHERE stream_id = 'run-during-upgrade' AND version = 4 RETURNING version)
           INSERT INTO granule_events (stream_id, stream_version, type, data) SELECT 'run-during-upgrade', version, 'DeploymentResumed', '{}' FROM claimed`,
        ),
      ),
    ).toBe(2);
    expect(await lastType('run-old')).toBe('DeploymentResumed');
  });
});
