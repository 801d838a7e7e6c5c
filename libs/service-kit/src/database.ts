import { DataSource } from 'typeorm';
import type { MixedList } from 'typeorm';
import { GranuleError } from '@granule/core';
import { redactUrl } from './env-config';

export class DatabaseUnreachableError extends GranuleError<'DATABASE_UNREACHABLE'> {}
export class DatabaseNotMigratedError extends GranuleError<'DATABASE_NOT_MIGRATED'> {}
export class DatabaseMigrationError extends GranuleError<'DATABASE_MIGRATION_FAILED'> {}

/**
 * A failure's own words: `connect ECONNREFUSED 127.0.0.1:5432`. An AggregateError (one
 * connection attempt per address of a host name) has no message of its own: its first error's.
 */
export function reasonOf(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) return reasonOf(err.errors[0]);
  if (err instanceof Error) return err.message || (err as { code?: string }).code || err.name;
  return String(err);
}

/**
 * Names of the DataSource's migrations that its migrations table does not record as run (every
 * one when there is no such table yet). Reads only: unlike TypeORM's `showMigrations`, it
 * creates nothing.
 */
export async function pendingMigrations(dataSource: DataSource): Promise<string[]> {
  const table = dataSource.options.migrationsTableName ?? 'migrations';
  const [{ present }]: Array<{ present: boolean }> = await dataSource.query(`SELECT to_regclass($1) IS NOT NULL AS present`, [table]);
  const rows: Array<{ name: string }> = present ? await dataSource.query(`SELECT name FROM "${table.replace(/"/g, '""')}"`) : [];
  const applied = new Set(rows.map((r) => r.name));
  return dataSource.migrations.map((m) => m.name ?? m.constructor.name).filter((name) => !applied.has(name));
}

/**
 * Opens a PostgreSQL DataSource (synchronize off) and, when asked, runs the migrations; refuses
 * a database that lacks any of `migrations`. A connection failure is one line naming the URL
 * (password hidden) and what to do.
 */
export async function openDatabase(options: {
  url: string;
  migrations?: MixedList<string | (new () => unknown)>;
  entities?: MixedList<string | (new () => unknown)>;
  runMigrations?: boolean;
  poolSize?: number;
}): Promise<DataSource> {
  const dataSource = new DataSource({
    type: 'postgres',
    url: options.url,
    synchronize: false,
    migrationsRun: false,
    migrations: options.migrations as never,
    entities: options.entities as never,
    extra: { max: options.poolSize ?? 10, connectionTimeoutMillis: 5000 },
    logging: false,
  });
  try {
    await dataSource.initialize();
  } catch (err) {
    throw new DatabaseUnreachableError('DATABASE_UNREACHABLE', `cannot connect to PostgreSQL at ${redactUrl(options.url)}: ${reasonOf(err)} — start it (tools/setup.sh) or set GRANULE_DATABASE_URL`, {
      cause: err,
    });
  }
  try {
    if (options.runMigrations) {
      await dataSource.runMigrations({ transaction: 'each' }).catch((err: unknown) => {
        throw new DatabaseMigrationError('DATABASE_MIGRATION_FAILED', `cannot migrate the database at ${redactUrl(options.url)}: ${reasonOf(err)}`, { cause: err });
      });
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
