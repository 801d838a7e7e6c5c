import type { MigrationInterface } from 'typeorm';
import { EVENT_STORE_MIGRATIONS } from '@granule/event-store';
import { PLAN_STORE_MIGRATIONS } from '@granule/plan-store';
import { ConfigStoreSchema1733000000000 } from './config-store-schema.migration';

/** The config-store's own migrations, in order. */
export const CONFIG_STORE_MIGRATIONS: Array<new () => MigrationInterface> = [ConfigStoreSchema1733000000000];

/**
 * Every migration of the Granule database, so one run (one Helm Job, `npm run migrate`)
 * migrates everything: the event store's, the plan store's, then the config-store's.
 */
export const ALL_MIGRATIONS: Array<new () => MigrationInterface> = [...EVENT_STORE_MIGRATIONS, ...(PLAN_STORE_MIGRATIONS as Array<new () => MigrationInterface>), ...CONFIG_STORE_MIGRATIONS];
