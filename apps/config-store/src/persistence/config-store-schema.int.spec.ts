import { createTestDatabase } from '@granule/event-store';
import type { TestDatabase } from '@granule/event-store';
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
    const pending = await db.dataSource.driver.createSchemaBuilder().log();
    expect(pending.upQueries.map((q) => q.query)).toEqual([]);
  });

  it('one migration run covers the event store and the config-store', async () => {
    const rows: { name: string }[] = await db.dataSource.query('SELECT name FROM migrations ORDER BY id');
    expect(rows.map((r) => r.name)).toEqual(ALL_MIGRATIONS.map((m) => new m().name));
    expect(ALL_MIGRATIONS.slice(-CONFIG_STORE_MIGRATIONS.length)).toEqual(CONFIG_STORE_MIGRATIONS);
  });

  it('the config-store migration reverts cleanly and applies again', async () => {
    await db.dataSource.undoLastMigration({ transaction: 'all' });
    const tables: { n: number }[] = await db.dataSource.query("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name LIKE 'config\\_%'");
    expect(tables[0].n).toBe(0);
    await db.dataSource.runMigrations({ transaction: 'all' });
    expect((await db.dataSource.driver.createSchemaBuilder().log()).upQueries).toEqual([]);
  });
});
