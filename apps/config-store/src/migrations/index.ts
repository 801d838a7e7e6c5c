import type { MigrationInterface } from 'typeorm';
import { EVENT_STORE_MIGRATIONS } from '@granule/event-store';
import { PLAN_STORE_MIGRATIONS } from '@granule/plan-store';
import { ConfigAudit1796000000000 } from './config-audit.migration';
import { ConfigStoreSchema1733000000000 } from './config-store-schema.migration';
import { NodeCredentials1797000000000 } from './node-credentials.migration';
import { PackageArtifacts1798000000000 } from './package-artifacts.migration';

/** The config-store's own migrations, in order. */
export const CONFIG_STORE_MIGRATIONS: Array<new () => MigrationInterface> = [
  ConfigStoreSchema1733000000000,
  ConfigAudit1796000000000,
  NodeCredentials1797000000000,
  PackageArtifacts1798000000000,
];

/** The timestamp TypeORM orders migrations by: the last 13 digits of the class name. */
function timestampOf(migration: new () => MigrationInterface): number {
  return Number(/(\d{13})$/.exec(migration.name)?.[1] ?? Number.NaN);
}

/**
 * Every migration of the Granule database, so one run (one Helm Job, `npm run migrate`)
 * migrates everything: the event store's, the plan store's and the config-store's, in the order
 * TypeORM runs them (by the timestamp in their names, whichever lib they come from).
 */
export const ALL_MIGRATIONS: Array<new () => MigrationInterface> = [
  ...EVENT_STORE_MIGRATIONS,
  ...(PLAN_STORE_MIGRATIONS as Array<new () => MigrationInterface>),
  ...CONFIG_STORE_MIGRATIONS,
].sort((a, b) => timestampOf(a) - timestampOf(b));
