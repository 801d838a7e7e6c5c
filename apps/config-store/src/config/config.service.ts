import path from 'node:path';
import { plainToInstance } from 'class-transformer';
import { IsIn, IsOptional, IsString, Matches, MinLength, validateSync } from 'class-validator';
import { GranuleError } from '@granule/core';

/** The variables the config-store reads, with their defaults (class-validator checks them once). */
export class ConfigStoreEnvironment {
  @Matches(/^postgres(ql)?:\/\/\S+$/, {
    message: 'expected a PostgreSQL URL like postgres://user:password@host:5432/granule',
  })
  GRANULE_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/granule';

  @Matches(/^(nats|tls):\/\/\S+$|^[A-Za-z0-9.-]+:\d+$/, { message: 'expected a NATS URL like nats://127.0.0.1:4222' })
  GRANULE_NATS_URL = 'nats://127.0.0.1:4222';

  @Matches(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, {
    message: 'expected dotted subject tokens of letters, digits, _ and - (no wildcards), like granule or test.abc',
  })
  GRANULE_SUBJECT_PREFIX = 'granule';

  @IsString()
  @MinLength(1, { message: 'expected a host or address to listen on, like 127.0.0.1 or 0.0.0.0' })
  GRANULE_HTTP_HOST = '127.0.0.1';

  @Matches(/^([1-9]\d{0,3}|[1-5]\d{4}|6[0-4]\d{3}|65[0-4]\d{2}|655[0-2]\d|6553[0-5])$/, {
    message: 'expected a port number from 1 to 65535',
  })
  GRANULE_HTTP_PORT = '8410';

  /** Without it the HTTP API is off (never open without a token). */
  @IsOptional()
  @MinLength(16, { message: 'expected a secret of at least 16 characters' })
  GRANULE_API_TOKEN?: string;

  /** Release plugin installed at the first start (seed 003); empty: none. */
  @IsString()
  GRANULE_PREINSTALLED_RELEASE = 'examples/releases/example-release';

  @IsIn(['true', 'false'], { message: 'expected true or false' })
  GRANULE_DATABASE_CREATE = 'true';

  @IsIn(['true', 'false'], { message: 'expected true or false' })
  GRANULE_MIGRATIONS_RUN = 'true';

  /** The name the other services read; when set it wins over GRANULE_MIGRATIONS_RUN. */
  @IsOptional()
  @IsIn(['1', '0', 'true', 'false'], { message: 'expected 1, 0, true or false' })
  GRANULE_RUN_MIGRATIONS?: string;

  /** `/healthz`, `/readyz` and `/metrics`; 0 turns them off. */
  @Matches(/^(0|[1-9]\d{0,3}|[1-5]\d{4}|6[0-4]\d{3}|65[0-4]\d{2}|655[0-2]\d|6553[0-5])$/, {
    message: 'expected a port number from 0 to 65535 (0 turns the health server off)',
  })
  GRANULE_HEALTH_PORT = '8411';
}

/** Typed, validated settings of the config-store. */
export interface ConfigStoreConfig {
  databaseUrl: string;
  natsUrl: string;
  subjectPrefix: string;
  httpHost: string;
  httpPort: number;
  /** Undefined: the HTTP API is not started. */
  apiToken?: string;
  /** Absolute path of the basic release to pre-install once; undefined: none. */
  preinstalledRelease?: string;
  /** Create the database when it does not exist. */
  createDatabase: boolean;
  /** Run pending migrations at start (a Helm Job runs them instead: set false there). */
  runMigrations: boolean;
  /** Port of `/healthz`, `/readyz` and `/metrics`; 0: off. */
  healthPort: number;
}

/** Bad configuration: every problem, one per line (`VARIABLE: expected ..., got ...`). */
export class ConfigEnvironmentError extends GranuleError<'CONFIG_ENVIRONMENT'> {
  constructor(readonly problems: string[]) {
    super('CONFIG_ENVIRONMENT', problems.join('\n'));
  }
}

/**
 * The one reader of `process.env` in the config-store: reads the variables once, validates
 * them and keeps the typed result. Tests build it from their own variables.
 */
export class ConfigService {
  private constructor(readonly config: ConfigStoreConfig) {}

  /** Reads and validates `env` (default `process.env`); throws `ConfigEnvironmentError` listing every problem. */
  static fromEnvironment(env: Record<string, string | undefined> = process.env, cwd = process.cwd()): ConfigService {
    const defaults = new ConfigStoreEnvironment();
    const given: Record<string, string> = {};
    for (const key of Object.keys(defaults).concat('GRANULE_API_TOKEN', 'GRANULE_RUN_MIGRATIONS')) {
      const value = env[key];
      if (value !== undefined) given[key] = value;
    }
    const values = plainToInstance(ConfigStoreEnvironment, given);
    const problems = validateSync(values).flatMap((e) =>
      Object.values(e.constraints ?? {}).map(
        (m) =>
          `${e.property}: ${m}, got ${e.property === 'GRANULE_API_TOKEN' ? `${String(e.value).length} characters` : JSON.stringify(e.value)}`,
      ),
    );
    if (problems.length > 0) throw new ConfigEnvironmentError(problems);
    const config: ConfigStoreConfig = {
      databaseUrl: values.GRANULE_DATABASE_URL,
      natsUrl: values.GRANULE_NATS_URL,
      subjectPrefix: values.GRANULE_SUBJECT_PREFIX,
      httpHost: values.GRANULE_HTTP_HOST,
      httpPort: Number(values.GRANULE_HTTP_PORT),
      createDatabase: values.GRANULE_DATABASE_CREATE === 'true',
      runMigrations:
        values.GRANULE_RUN_MIGRATIONS !== undefined
          ? ['1', 'true'].includes(values.GRANULE_RUN_MIGRATIONS)
          : values.GRANULE_MIGRATIONS_RUN === 'true',
      healthPort: Number(values.GRANULE_HEALTH_PORT),
    };
    if (values.GRANULE_API_TOKEN) config.apiToken = values.GRANULE_API_TOKEN;
    if (values.GRANULE_PREINSTALLED_RELEASE !== '')
      config.preinstalledRelease = path.resolve(cwd, values.GRANULE_PREINSTALLED_RELEASE);
    return new ConfigService(Object.freeze(config));
  }
}
