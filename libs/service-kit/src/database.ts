import { DataSource } from 'typeorm';
import type { MixedList } from 'typeorm';
import { GranuleError } from '@granule/core';
import { redactUrl } from './env-config';

export class DatabaseUnreachableError extends GranuleError<'DATABASE_UNREACHABLE'> {}

/**
 * Opens a PostgreSQL DataSource (synchronize off) and, when asked, runs the migrations.
 * A connection failure is one line naming the URL (password hidden) and what to do.
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
    const reason = err instanceof Error ? err.message : String(err);
    throw new DatabaseUnreachableError('DATABASE_UNREACHABLE', `cannot connect to PostgreSQL at ${redactUrl(options.url)}: ${reason} — start it (tools/setup.sh) or set GRANULE_DATABASE_URL`, { cause: err });
  }
  if (options.runMigrations) await dataSource.runMigrations({ transaction: 'each' });
  return dataSource;
}
