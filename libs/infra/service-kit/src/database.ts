import { Client } from 'pg';
import { DataSource } from 'typeorm';
import type { MixedList } from 'typeorm';
import { GranuleError } from '@granule/core';
import { redactUrl } from './env-config';

export class DatabaseUnreachableError extends GranuleError<'DATABASE_UNREACHABLE'> {}
export class DatabaseNotMigratedError extends GranuleError<'DATABASE_NOT_MIGRATED'> {}
export class DatabaseMigrationError extends GranuleError<'DATABASE_MIGRATION_FAILED'> {}

/**
 * The error that says what went wrong: an AggregateError (one connection attempt per address of
 * a host name) has no message or code of its own, so its first error stands for it.
 */
function firstError(err: unknown): unknown {
  return err instanceof AggregateError && err.errors.length > 0 ? firstError(err.errors[0]) : err;
}

/** A failure's own words: `connect ECONNREFUSED 127.0.0.1:5432` (see `firstError`). */
export function reasonOf(err: unknown): string {
  const e = firstError(err);
  if (e instanceof Error) return e.message || (e as { code?: string }).code || e.name;
  return String(e);
}

/**
 * Names of the DataSource's migrations that its migrations table does not record as run (every
 * one when there is no such table yet). Reads only: unlike TypeORM's `showMigrations`, it
 * creates nothing.
 */
export async function pendingMigrations(dataSource: DataSource): Promise<string[]> {
  const table = dataSource.options.migrationsTableName ?? 'migrations';
  const [{ present }]: Array<{ present: boolean }> = await dataSource.query(
    `SELECT to_regclass($1) IS NOT NULL AS present`,
    [table],
  );
  const rows: Array<{ name: string }> = present
    ? await dataSource.query(`SELECT name FROM "${table.replace(/"/g, '""')}"`)
    : [];
  const applied = new Set(rows.map((r) => r.name));
  return dataSource.migrations.map((m) => m.name ?? m.constructor.name).filter((name) => !applied.has(name));
}

/** SQLSTATE of a connection to a database that does not exist. */
const DATABASE_MISSING = '3D000';

function sqlStateOf(err: unknown): string | undefined {
  const code = (firstError(err) as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** A failed connection in one line: the URL (password hidden), the reason and what to do about it. */
export function connectionFailure(url: string, err: unknown): DatabaseUnreachableError {
  const at = `cannot connect to PostgreSQL at ${redactUrl(url)}: ${reasonOf(err).split('\n')[0]}`;
  const code = sqlStateOf(err);
  const todo =
    code === DATABASE_MISSING
      ? 'create it (the config-store does with GRANULE_DATABASE_CREATE=true) or set GRANULE_DATABASE_URL'
      : code === '28P01' || code === '28000'
        ? 'fix the user or password in GRANULE_DATABASE_URL'
        : 'start it (tools/setup.sh) or set GRANULE_DATABASE_URL';
  return new DatabaseUnreachableError('DATABASE_UNREACHABLE', `${at} — ${todo}`, { cause: err });
}

/** Creates the database `url` names, through the server's `postgres` database; one that exists already is fine. */
async function createDatabase(url: string): Promise<void> {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString(), connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } catch (err) {
    // Another replica created it first.
    if (sqlStateOf(err) !== '42P04') throw err;
  } finally {
    await client.end();
  }
}

export interface OpenDatabaseOptions {
  url: string;
  migrations?: MixedList<string | (new () => unknown)>;
  entities?: MixedList<string | (new () => unknown)>;
  /** Run the pending migrations before the check. */
  runMigrations?: boolean;
  /** `each` (the default): one transaction per migration; `all`: every pending one in one transaction. */
  migrationsTransaction?: 'each' | 'all';
  /** Told the names of the migrations run (none: an empty list). */
  onMigrated?: (names: string[]) => void;
  /** Create the database when it does not exist (the config-store's GRANULE_DATABASE_CREATE). */
  create?: boolean;
  poolSize?: number;
}

/**
 * Opens a PostgreSQL DataSource (synchronize off), creating the database first when asked and
 * it is missing, and, when asked, runs the migrations; refuses a database that lacks any of
 * `migrations`. Every failure is one line naming the URL (password hidden) and what to do, and
 * leaves no connection open.
 */
export async function openDatabase(options: OpenDatabaseOptions): Promise<DataSource> {
  const newDataSource = (): DataSource =>
    new DataSource({
      type: 'postgres',
      url: options.url,
      synchronize: false,
      migrationsRun: false,
      migrations: options.migrations as never,
      entities: options.entities as never,
      extra: { max: options.poolSize ?? 10, connectionTimeoutMillis: 5000 },
      logging: false,
    });
  let dataSource = newDataSource();
  try {
    await dataSource.initialize();
  } catch (err) {
    if (sqlStateOf(err) !== DATABASE_MISSING || !options.create) throw connectionFailure(options.url, err);
    try {
      await createDatabase(options.url);
      dataSource = newDataSource();
      await dataSource.initialize();
    } catch (again) {
      throw connectionFailure(options.url, again);
    }
  }
  try {
    if (options.runMigrations) {
      const ran = await dataSource
        .runMigrations({ transaction: options.migrationsTransaction ?? 'each' })
        .catch((err: unknown) => {
          throw new DatabaseMigrationError(
            'DATABASE_MIGRATION_FAILED',
            `cannot migrate the database at ${redactUrl(options.url)}: ${reasonOf(err)}`,
            { cause: err },
          );
        });
      options.onMigrated?.(ran.map((m) => m.name));
    }
    // Code newer than its schema would fail on its first write, mid-run: refuse to start instead.
    const pending = await pendingMigrations(dataSource);
    if (pending.length > 0) {
      throw new DatabaseNotMigratedError(
        'DATABASE_NOT_MIGRATED',
        `the database at ${redactUrl(options.url)} lacks migration${pending.length > 1 ? 's' : ''} ${pending.join(', ')} — run them (GRANULE_RUN_MIGRATIONS=1, \`npm run migrate\` or the Helm migration job)`,
      );
    }
  } catch (err) {
    await dataSource.destroy();
    throw err;
  }
  return dataSource;
}
