import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import { GranuleError } from '@granule/core';
import { openDatabase as openServiceDatabase, reasonOf } from '@granule/service-kit';
import type { GraphPlannerConfig } from './graph-planner.config';
import { GRAPH_PLANNER_MIGRATIONS } from './graph-planner.migrations';

/** graph-planner cannot start; the message is the one line the operator sees. */
export class StartupError extends GranuleError<'STARTUP_FAILED'> {
  constructor(message: string, options?: { cause?: unknown }) {
    super('STARTUP_FAILED', message, options);
  }
}

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

/** Connects to NATS (reconnecting forever once connected). */
export async function connectNats(config: GraphPlannerConfig): Promise<NatsConnection> {
  try {
    return await connect({ servers: config.natsUrl.split(','), name: 'graph-planner', maxReconnectAttempts: -1 });
  } catch (err) {
    throw new StartupError(
      `cannot connect to NATS at ${config.natsUrl}: ${reasonOf(err)} — start it or set GRANULE_NATS_URL`,
      { cause: err },
    );
  }
}
