import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource, type MigrationInterface, type QueryRunner } from 'typeorm';
import { EVENT_STORE_MIGRATIONS } from '../event-store-schema.migration';

/** Server the throwaway databases are created on, unless `adminUrl` or GRANULE_TEST_DATABASE_URL says otherwise. */
export const DEFAULT_TEST_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabaseOptions {
  /** Migrations to run; defaults to `EVENT_STORE_MIGRATIONS`. Pass the service's full list to test its schema. */
  migrations?: Array<new () => MigrationInterface>;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- TypeORM's own type for entity classes
  entities?: Function[];
  /** A URL of any existing database on the server, used to create and drop the test database. */
  adminUrl?: string;
}

export interface TestDatabase {
  /** Database name: `granule_test_<prefix>_<8 hex chars>`. */
  name: string;
  /** Connection URL of the new database. */
  url: string;
  /** Initialised, migrated DataSource on the new database. */
  dataSource: DataSource;
  /** Closes the DataSource and drops the database (forcing out other sessions). */
  drop(): Promise<void>;
}

async function onAdmin(adminUrl: string, sql: string): Promise<void> {
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * Creates a throwaway database, migrates it and opens a DataSource on it, so each
 * integration suite has its own. Call `drop()` in `afterAll`.
 */
export async function createTestDatabase(prefix: string, options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  // Test-only code: the one place here that reads the environment.
  const adminUrl = options.adminUrl ?? process.env['GRANULE_TEST_DATABASE_URL'] ?? DEFAULT_TEST_ADMIN_URL;
  const safePrefix = prefix
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 32);
  const name = `granule_test_${safePrefix}_${randomBytes(4).toString('hex')}`;
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;

  await onAdmin(adminUrl, `CREATE DATABASE "${name}"`);
  const dataSource = new DataSource({
    type: 'postgres',
    url: url.toString(),
    migrations: options.migrations ?? EVENT_STORE_MIGRATIONS,
    entities: options.entities ?? [],
    synchronize: false,
    logging: false,
  });
  const drop = async () => {
    if (dataSource.isInitialized) await dataSource.destroy();
    await onAdmin(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  };
  try {
    await dataSource.initialize();
    await dataSource.runMigrations();
  } catch (error) {
    await drop();
    throw error;
  }
  return { name, url: url.toString(), dataSource, drop };
}

/**
 * The SQL TypeORM's schema builder would run to make the database match the entities: empty when
 * the migrations and the entities agree (twenty's pending-migration check).
 *
 * The builder reads the schema through one query runner, i.e. one PostgreSQL client, and TypeORM
 * (1.1) loads the tables' columns with `Promise.all`: every enum or array column asks for its type
 * while the other columns' queries still run on the same client, which pg 8 warns about and pg 9
 * refuses. The runner handed to the builder here runs its queries one after another instead.
 */
export async function pendingSchemaQueries(dataSource: DataSource): Promise<string[]> {
  const builder = dataSource.driver.createSchemaBuilder();
  const createQueryRunner = dataSource.createQueryRunner;
  dataSource.createQueryRunner = (...args) => oneQueryAtATime(createQueryRunner.apply(dataSource, args));
  try {
    return (await builder.log()).upQueries.map((q) => q.query);
  } finally {
    dataSource.createQueryRunner = createQueryRunner;
  }
}

/** Makes a query runner wait for its previous query before it sends the next one. */
function oneQueryAtATime(runner: QueryRunner): QueryRunner {
  const query = runner.query.bind(runner) as (...args: unknown[]) => Promise<unknown>;
  let previous: Promise<unknown> = Promise.resolve();
  runner.query = ((...args: unknown[]) => {
    const next = previous.then(() => query(...args));
    previous = next.catch(() => undefined);
    return next;
  }) as QueryRunner['query'];
  return runner;
}
