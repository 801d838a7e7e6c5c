import { IsBoolean, IsInt, Matches, Max, Min } from 'class-validator';
import { loadEnvConfig, NATS_ENV, NatsSettings } from '@granule/service-kit';

/** graph-planner's settings, read once from the environment by `loadGraphPlannerConfig`. */
export class GraphPlannerConfig extends NatsSettings {
  @Matches(/^postgres(ql)?:\/\/\S+$/, { message: 'must be a postgres:// URL' })
  databaseUrl = 'postgres://postgres@127.0.0.1:5432/granule';

  /** Migrate the database at start (off by default; the Helm migration job does it). */
  @IsBoolean({ message: 'must be 1 or 0' })
  runMigrations = false;

  /** `/healthz`, `/readyz` and `/metrics`; 0 turns them off. */
  @IsInt({ message: 'must be a port number from 0 to 65535 (0 turns the health server off)' })
  @Min(0, { message: 'must be a port number from 0 to 65535 (0 turns the health server off)' })
  @Max(65535, { message: 'must be a port number from 0 to 65535 (0 turns the health server off)' })
  healthPort = 8412;
}

/** Reads and validates GRANULE_* variables; the only reader of the environment. Throws `ConfigError`. */
export function loadGraphPlannerConfig(env: Record<string, string | undefined>): GraphPlannerConfig {
  return loadEnvConfig(GraphPlannerConfig, env, {
    ...NATS_ENV,
    databaseUrl: 'GRANULE_DATABASE_URL',
    runMigrations: { name: 'GRANULE_RUN_MIGRATIONS', type: 'boolean' },
    healthPort: { name: 'GRANULE_HEALTH_PORT', type: 'number' },
  });
}
