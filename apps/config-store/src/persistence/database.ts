import type { DataSource } from 'typeorm';
import { openDatabase } from '@granule/service-kit';
import { ALL_MIGRATIONS } from '../migrations';
import { CONFIG_STORE_ENTITIES } from './config-store.entities';

/**
 * Opens the Granule database with the config-store's entities and every migration (service-kit's
 * `openDatabase`, as the other services): creates the database when it is missing and `create`
 * is set, runs the pending migrations in one transaction when `runMigrations` is set (telling
 * `onMigrated` their names), and refuses a database that still lacks one. Failures are one line
 * (`DatabaseUnreachableError`, `DatabaseMigrationError`, `DatabaseNotMigratedError`).
 */
export function openConfigDatabase(
  url: string,
  options: { create: boolean; runMigrations: boolean; onMigrated?: (names: string[]) => void },
): Promise<DataSource> {
  return openDatabase({
    url,
    entities: CONFIG_STORE_ENTITIES,
    migrations: ALL_MIGRATIONS,
    create: options.create,
    runMigrations: options.runMigrations,
    migrationsTransaction: 'all',
    onMigrated: options.onMigrated,
  });
}
