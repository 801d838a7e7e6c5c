import { connect, type NatsConnection } from '@nats-io/transport-node';
import { DataSource } from 'typeorm';
import { GranuleError } from '@granule/core';
import { type GraphPlannerConfig, redactUrl } from './graph-planner.config';
import { GRAPH_PLANNER_MIGRATIONS } from './graph-planner.migrations';

/** graph-planner cannot start; the message is the one line the operator sees. */
export class StartupError extends GranuleError<'STARTUP_FAILED'> {
  constructor(message: string, options?: { cause?: unknown }) {
    super('STARTUP_FAILED', message, options);
  }
}

/** `connect ECONNREFUSED 127.0.0.1:5432`; an AggregateError (one try per address) has no message of its own. */
function reasonOf(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) return reasonOf(err.errors[0]);
  if (err instanceof Error) return err.message || (err as { code?: string }).code || err.name;
  return String(err);
}

/** Opens the database, migrates it when asked, and checks the plan table is there. */
export async function openDatabase(config: GraphPlannerConfig): Promise<DataSource> {
  const where = redactUrl(config.databaseUrl);
  const dataSource = new DataSource({ type: 'postgres', url: config.databaseUrl, migrations: GRAPH_PLANNER_MIGRATIONS, synchronize: false, logging: false, connectTimeoutMS: 5000 });
  try {
    await dataSource.initialize();
  } catch (err) {
    throw new StartupError(`cannot connect to PostgreSQL at ${where}: ${reasonOf(err)} — start it or set GRANULE_DATABASE_URL`, { cause: err });
  }
  try {
    if (config.runMigrations) await dataSource.runMigrations({ transaction: 'each' });
    const [row] = await dataSource.query(`SELECT to_regclass('granule_plans') IS NOT NULL AS present`);
    if (!row.present) {
      throw new StartupError(`table granule_plans is missing in ${where}: run the migrations (GRANULE_RUN_MIGRATIONS=1 or the Helm migration job)`);
    }
  } catch (err) {
    await dataSource.destroy();
    if (err instanceof StartupError) throw err;
    throw new StartupError(`cannot prepare the database at ${where}: ${reasonOf(err)}`, { cause: err });
  }
  return dataSource;
}

/** Connects to NATS (reconnecting forever once connected). */
export async function connectNats(config: GraphPlannerConfig): Promise<NatsConnection> {
  try {
    return await connect({ servers: config.natsUrl.split(','), name: 'graph-planner', maxReconnectAttempts: -1 });
  } catch (err) {
    throw new StartupError(`cannot connect to NATS at ${config.natsUrl}: ${reasonOf(err)} — start it or set GRANULE_NATS_URL`, { cause: err });
  }
}
