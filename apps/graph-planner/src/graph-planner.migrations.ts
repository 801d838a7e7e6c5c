import type { MigrationInterface } from 'typeorm';
import { PLAN_STORE_MIGRATIONS } from '@granule/plan-store';

/** Every migration graph-planner's database needs, oldest first (the Helm migration job runs these). */
export const GRAPH_PLANNER_MIGRATIONS: Array<new () => MigrationInterface> = [...PLAN_STORE_MIGRATIONS];
