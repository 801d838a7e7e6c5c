import { createTestDatabase, pendingSchemaQueries } from '@granule/event-store';
import type { TestDatabase } from '@granule/event-store';
import { EVENT_STORE_MIGRATIONS } from '@granule/event-store';
import { PLAN_STORE_MIGRATIONS } from '@granule/plan-store';
import { ALL_MIGRATIONS, CONFIG_STORE_MIGRATIONS } from '../migrations';
import { CONFIG_STORE_ENTITIES } from './config-store.entities';

describe('config-store schema', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('config_schema', { migrations: ALL_MIGRATIONS, entities: CONFIG_STORE_ENTITIES });
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('entities and migrations agree - the schema builder has nothing to change after the migrations', async () => {
    expect(await pendingSchemaQueries(db.dataSource)).toEqual([]);
  });

  it('one migration run covers the event store, the plan store and the config-store, in timestamp order', async () => {
    const rows: { name: string }[] = await db.dataSource.query('SELECT name FROM migrations ORDER BY id');
    expect(rows.map((r) => r.name)).toEqual(ALL_MIGRATIONS.map((m) => new m().name));
    expect(new Set(ALL_MIGRATIONS)).toEqual(
      new Set([...EVENT_STORE_MIGRATIONS, ...PLAN_STORE_MIGRATIONS, ...CONFIG_STORE_MIGRATIONS]),
    );
    const stamps = rows.map((r) => Number(r.name.slice(-13)));
    expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
  });

  it('every migration reverts cleanly, newest first, and they all apply again', async () => {
    for (let i = 0; i < ALL_MIGRATIONS.length; i++) await db.dataSource.undoLastMigration({ transaction: 'all' });
    const tables: { table_name: string }[] = await db.dataSource.query(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'migrations' ORDER BY table_name",
    );
    expect(tables.map((t) => t.table_name)).toEqual([]);
    await db.dataSource.runMigrations({ transaction: 'all' });
    expect(await pendingSchemaQueries(db.dataSource)).toEqual([]);
  });
});
