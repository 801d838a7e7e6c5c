import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { createTestDatabase, type TestDatabase } from '@granule/event-store';
import type { MigrationInterface, QueryRunner } from 'typeorm';
import { DatabaseNotMigratedError, DatabaseUnreachableError, openDatabase, pendingMigrations } from './database';

class FirstTable1700000000000 implements MigrationInterface {
  name = 'FirstTable1700000000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE kit_first (id int)`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE kit_first`);
  }
}

class SecondColumn1700000000001 implements MigrationInterface {
  name = 'SecondColumn1700000000001';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE kit_first ADD COLUMN label text`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE kit_first DROP COLUMN label`);
  }
}

describe('openDatabase (PostgreSQL)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    // Migrated to the first migration only: the schema an older release left.
    db = await createTestDatabase('kit_database', { migrations: [FirstTable1700000000000] });
  });

  afterAll(() => db.drop());

  it('refuses a database that lacks a migration the code needs, naming it, the database and what to run', async () => {
    const attempt = openDatabase({ url: db.url, migrations: [FirstTable1700000000000, SecondColumn1700000000001] });
    await expect(attempt).rejects.toBeInstanceOf(DatabaseNotMigratedError);
    await expect(attempt).rejects.toThrow(
      `the database at ${db.url} lacks migration SecondColumn1700000000001 — run them (GRANULE_RUN_MIGRATIONS=1, \`npm run migrate\` or the Helm migration job)`,
    );
    const columns: Array<{ column_name: string }> = await db.dataSource.query(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'kit_first'`,
    );
    expect(columns.map((c) => c.column_name)).toEqual(['id']);
  });

  it('counts every migration pending on a database without a migrations table, and creates none', async () => {
    const empty = await createTestDatabase('kit_empty', { migrations: [] });
    try {
      await empty.dataSource.query(`DROP TABLE IF EXISTS migrations`);
      const attempt = openDatabase({
        url: empty.url,
        migrations: [FirstTable1700000000000, SecondColumn1700000000001],
      });
      await expect(attempt).rejects.toThrow(
        `lacks migrations FirstTable1700000000000, SecondColumn1700000000001 — run them`,
      );
      const [{ present }]: Array<{ present: boolean }> = await empty.dataSource.query(
        `SELECT to_regclass('migrations') IS NOT NULL AS present`,
      );
      expect(present).toBe(false);
    } finally {
      await empty.drop();
    }
  });

  it('migrates when asked, and then starts', async () => {
    const ds = await openDatabase({
      url: db.url,
      migrations: [FirstTable1700000000000, SecondColumn1700000000001],
      runMigrations: true,
    });
    try {
      expect(await pendingMigrations(ds)).toEqual([]);
      await ds.query(`INSERT INTO kit_first (id, label) VALUES (1, 'one')`);
    } finally {
      await ds.destroy();
    }
  });

  describe('a database that does not exist', () => {
    const admin = new URL(process.env['GRANULE_TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres');
    const name = `granule_test_kit_created_${randomBytes(4).toString('hex')}`;
    const url = Object.assign(new URL(admin.toString()), { pathname: `/${name}` }).toString();
    const onAdmin = async (sql: string): Promise<unknown[]> => {
      const client = new Client({ connectionString: admin.toString() });
      await client.connect();
      try {
        return (await client.query(sql)).rows;
      } finally {
        await client.end();
      }
    };

    afterAll(() => onAdmin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));

    it('without create: refused in one line that names it and what to do, and not created', async () => {
      const attempt = openDatabase({ url, migrations: [FirstTable1700000000000] });
      await expect(attempt).rejects.toBeInstanceOf(DatabaseUnreachableError);
      await expect(attempt).rejects.toThrow(
        `cannot connect to PostgreSQL at ${url}: database "${name}" does not exist — create it (the config-store does with GRANULE_DATABASE_CREATE=true) or set GRANULE_DATABASE_URL`,
      );
      expect(await onAdmin(`SELECT 1 FROM pg_database WHERE datname = '${name}'`)).toHaveLength(0);
    });

    it('with create: created, migrated (names told), then opened; a second open finds it', async () => {
      const told: string[][] = [];
      const ds = await openDatabase({
        url,
        migrations: [FirstTable1700000000000, SecondColumn1700000000001],
        create: true,
        runMigrations: true,
        migrationsTransaction: 'all',
        onMigrated: (n) => told.push(n),
      });
      try {
        await ds.query(`INSERT INTO kit_first (id, label) VALUES (1, 'one')`);
      } finally {
        await ds.destroy();
      }
      const again = await openDatabase({
        url,
        migrations: [FirstTable1700000000000, SecondColumn1700000000001],
        create: true,
        runMigrations: true,
        onMigrated: (n) => told.push(n),
      });
      try {
        expect(await again.query(`SELECT label FROM kit_first`)).toEqual([{ label: 'one' }]);
      } finally {
        await again.destroy();
      }
      expect(told).toEqual([['FirstTable1700000000000', 'SecondColumn1700000000001'], []]);
    });
  });
});
