import type { DataSource } from 'typeorm';
import { openDatabase as openServiceDatabase } from '@granule/service-kit';
import type { GraphPlannerConfig } from './graph-planner.config';
import { GRAPH_PLANNER_MIGRATIONS } from './graph-planner.migrations';

/**
 * Opens the database, migrating it when asked; refuses one that lacks the plan store's
 * migrations (service-kit's `openDatabase`: one line naming the database and what to run).
 */
export function openDatabase(config: GraphPlannerConfig): Promise<DataSource> {
  return openServiceDatabase({
    url: config.databaseUrl,
    migrations: GRAPH_PLANNER_MIGRATIONS,
    runMigrations: config.runMigrations,
    poolSize: 10,
  });
}
