import { plainToInstance } from 'class-transformer';
import { IsBoolean, Matches, ValidateBy, validateSync } from 'class-validator';
import { GranuleError } from '@granule/core';
import { DEFAULT_SUBJECT_PREFIX } from '@granule/contracts';

/** graph-planner's settings, read once from the environment by `loadGraphPlannerConfig`. */
export class GraphPlannerConfig {
  /** GRANULE_NATS_URL: one URL or a comma-separated list. */
  @Matches(/^(nats|tls|ws|wss):\/\/[^\s,]+(,(nats|tls|ws|wss):\/\/[^\s,]+)*$/, {
    message: 'GRANULE_NATS_URL must be a nats:// URL (or a comma-separated list of them)',
  })
  natsUrl = 'nats://127.0.0.1:4222';

  /** GRANULE_DATABASE_URL. */
  @Matches(/^postgres(ql)?:\/\/\S+$/, { message: 'GRANULE_DATABASE_URL must be a postgres:// URL' })
  databaseUrl = 'postgres://postgres@127.0.0.1:5432/granule';

  /** GRANULE_SUBJECT_PREFIX: first token of every subject. */
  @Matches(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, {
    message: 'GRANULE_SUBJECT_PREFIX must be dotted tokens of letters, digits, _ and - (e.g. granule)',
  })
  subjectPrefix = DEFAULT_SUBJECT_PREFIX;

  /** GRANULE_RUN_MIGRATIONS=1: migrate the database at start (off by default; the Helm migration job does it). */
  @IsBoolean({ message: 'GRANULE_RUN_MIGRATIONS must be 1 or 0' })
  runMigrations = false;

  /** GRANULE_HEALTH_PORT: `/healthz`, `/readyz` and `/metrics`; 0 turns them off. */
  @ValidateBy(
    { name: 'isHealthPort', validator: { validate: (v) => Number.isInteger(v) && v >= 0 && v <= 65535 } },
    { message: 'GRANULE_HEALTH_PORT must be a port number from 0 to 65535 (0 turns the health server off)' },
  )
  healthPort = 8412;
}

/** The configuration is unusable; the message names every bad variable. */
export class ConfigError extends GranuleError<'CONFIG_INVALID'> {
  constructor(message: string) {
    super('CONFIG_INVALID', message);
  }
}

const BOOLEAN: Record<string, boolean> = { '1': true, true: true, '0': false, false: false, '': false };

/** Reads and validates GRANULE_* variables; the only reader of the environment. Throws `ConfigError`. */
export function loadGraphPlannerConfig(env: Record<string, string | undefined>): GraphPlannerConfig {
  const raw: Record<string, unknown> = {};
  const set = (key: keyof GraphPlannerConfig, name: string): void => {
    const value = env[name];
    if (value !== undefined && value !== '') raw[key] = value.trim();
  };
  set('natsUrl', 'GRANULE_NATS_URL');
  set('databaseUrl', 'GRANULE_DATABASE_URL');
  set('subjectPrefix', 'GRANULE_SUBJECT_PREFIX');
  const migrations = env['GRANULE_RUN_MIGRATIONS'];
  if (migrations !== undefined) raw.runMigrations = BOOLEAN[migrations.trim().toLowerCase()] ?? migrations;
  const healthPort = env['GRANULE_HEALTH_PORT']?.trim();
  if (healthPort) raw.healthPort = /^\d+$/.test(healthPort) ? Number(healthPort) : healthPort;
  const config = plainToInstance(GraphPlannerConfig, raw);
  const errors = validateSync(config);
  if (errors.length > 0) {
    const problems = errors.flatMap((e) =>
      Object.values(e.constraints ?? {}).map((m) => `${m} (got ${JSON.stringify(e.value)})`),
    );
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  return config;
}
