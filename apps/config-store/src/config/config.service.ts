import path from 'node:path';
import { IsBoolean, IsInt, IsOptional, IsString, Matches, Max, Min, MinLength } from 'class-validator';
import { secretsPublicKeyProblem } from '@granule/secrets';
import { ConfigError, loadEnvConfig, NATS_ENV, NatsSettings } from '@granule/service-kit';

/** The config-store's settings, read once from the environment by `loadConfigStoreConfig`. */
export class ConfigStoreConfig extends NatsSettings {
  @Matches(/^postgres(ql)?:\/\/\S+$/, {
    message: 'expected a PostgreSQL URL like postgres://user:password@host:5432/granule',
  })
  databaseUrl = 'postgres://postgres@127.0.0.1:5432/granule';

  @IsString()
  @MinLength(1, { message: 'expected a host or address to listen on, like 127.0.0.1 or 0.0.0.0' })
  httpHost = '127.0.0.1';

  @IsInt({ message: 'expected a port number from 1 to 65535' })
  @Min(1, { message: 'expected a port number from 1 to 65535' })
  @Max(65535, { message: 'expected a port number from 1 to 65535' })
  httpPort = 8410;

  /** Without it the HTTP API is off (never open without a token). */
  @IsOptional()
  @MinLength(16, { message: 'expected a secret of at least 16 characters' })
  apiToken?: string;

  /** Release plugin installed at the first start (seed 003); empty: none. Relative to the working directory. */
  @IsString()
  preinstalledRelease = 'examples/releases/example-release';

  /** Create the database when it does not exist. */
  @IsBoolean({ message: 'expected 1, 0, true or false' })
  createDatabase = true;

  /** Run pending migrations at start (a Helm Job runs them instead: set 0 there). */
  @IsBoolean({ message: 'expected 1, 0, true or false' })
  runMigrations = true;

  /** `/healthz`, `/readyz` and `/metrics`; 0 turns them off. */
  @IsInt({ message: 'expected a port number from 0 to 65535 (0 turns the health server off)' })
  @Min(0, { message: 'expected a port number from 0 to 65535 (0 turns the health server off)' })
  @Max(65535, { message: 'expected a port number from 0 to 65535 (0 turns the health server off)' })
  healthPort = 8411;

  /** The installation's public key: secrets are sealed with it before they are stored (ADR 0023). */
  @IsOptional()
  @IsString()
  secretsPublicKey?: string;
}

/**
 * Reads and validates the config-store's GRANULE_* variables (the one reader of the
 * environment); throws service-kit's `ConfigError` naming every bad variable, a secret by its
 * length only. The pre-installed release is resolved against `cwd`; empty turns it off.
 */
export function loadConfigStoreConfig(
  env: Record<string, string | undefined>,
  cwd = process.cwd(),
): Readonly<ConfigStoreConfig> {
  // An empty GRANULE_PREINSTALLED_RELEASE means none, not the default.
  const preinstall = env.GRANULE_PREINSTALLED_RELEASE;
  const config = loadEnvConfig(ConfigStoreConfig, env, {
    ...NATS_ENV,
    databaseUrl: 'GRANULE_DATABASE_URL',
    httpHost: 'GRANULE_HTTP_HOST',
    httpPort: { name: 'GRANULE_HTTP_PORT', type: 'number' },
    apiToken: { name: 'GRANULE_API_TOKEN', secret: true },
    preinstalledRelease: 'GRANULE_PREINSTALLED_RELEASE',
    createDatabase: { name: 'GRANULE_DATABASE_CREATE', type: 'boolean' },
    runMigrations: { name: 'GRANULE_RUN_MIGRATIONS', type: 'boolean' },
    healthPort: { name: 'GRANULE_HEALTH_PORT', type: 'number' },
    secretsPublicKey: 'GRANULE_SECRETS_PUBLIC_KEY',
  });
  const problem = config.secretsPublicKey === undefined ? undefined : secretsPublicKeyProblem(config.secretsPublicKey);
  if (problem) throw new ConfigError([`GRANULE_SECRETS_PUBLIC_KEY: ${problem}`]);
  config.preinstalledRelease =
    preinstall !== undefined && preinstall.trim() === '' ? '' : path.resolve(cwd, config.preinstalledRelease);
  return Object.freeze(config);
}
