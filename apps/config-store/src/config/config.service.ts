import { readFileSync } from 'node:fs';
import path from 'node:path';
import { IsBoolean, IsInt, IsOptional, IsString, Matches, Max, Min, MinLength } from 'class-validator';
import { secretsPublicKeyProblem } from '@granule/secrets';
import { ConfigError, loadEnvConfig, NATS_ENV, NatsSettings, type EnvField } from '@granule/service-kit';

/** One HTTP API caller: the name its calls are recorded with, and its secret token. */
export interface ApiCaller {
  readonly name: string;
  readonly token: string;
}

/** The caller name of the single GRANULE_API_TOKEN. */
export const SINGLE_TOKEN_CALLER = 'api-token';

const CALLER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$/;

/** True for an address only this host reaches (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * `name=token` entries, from GRANULE_API_TOKENS (comma-separated) or one per line of the file
 * GRANULE_API_TOKENS_FILE (blank lines and `#` comments skipped). A problem names the variable,
 * the entry or file line and what was expected; never a token.
 */
function parseApiCallers(
  text: string,
  where: (index: number) => string,
  separator: RegExp,
): {
  callers: ApiCaller[];
  problems: string[];
} {
  const callers: ApiCaller[] = [];
  const problems: string[] = [];
  text.split(separator).forEach((raw, i) => {
    const entry = raw.trim();
    if (entry === '' || entry.startsWith('#')) return;
    const eq = entry.indexOf('=');
    if (eq < 0) {
      problems.push(`${where(i)}: expected name=token (no '=' in it)`);
      return;
    }
    const name = entry.slice(0, eq).trim();
    const token = entry.slice(eq + 1).trim();
    if (!CALLER_NAME.test(name))
      problems.push(
        `${where(i)}: caller name ${JSON.stringify(name.slice(0, 70))} is not allowed: expected 1 to 64 letters, digits, '_', '.', '@' or '-'`,
      );
    else if (token.length < 16)
      problems.push(
        `${where(i)}: the token of '${name}' is too short: expected at least 16 characters (got ${token.length})`,
      );
    else callers.push({ name, token });
  });
  return { callers, problems };
}

function apiCallersOf(env: Record<string, string | undefined>, single: string | undefined): ApiCaller[] {
  const callers: ApiCaller[] = single ? [{ name: SINGLE_TOKEN_CALLER, token: single }] : [];
  const problems: string[] = [];
  const list = env.GRANULE_API_TOKENS;
  if (list !== undefined && list.trim() !== '') {
    const parsed = parseApiCallers(list, (i) => `GRANULE_API_TOKENS: entry ${i + 1}`, /,/);
    callers.push(...parsed.callers);
    problems.push(...parsed.problems);
  }
  const file = env.GRANULE_API_TOKENS_FILE;
  if (file !== undefined && file.trim() !== '') {
    let text: string | undefined;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      problems.push(
        `GRANULE_API_TOKENS_FILE: cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (err as Error).message}`,
      );
    }
    if (text !== undefined) {
      const parsed = parseApiCallers(text, (i) => `GRANULE_API_TOKENS_FILE: ${file} line ${i + 1}`, /\r?\n/);
      callers.push(...parsed.callers);
      problems.push(...parsed.problems);
    }
  }
  const names = new Map<string, number>();
  const tokens = new Map<string, string>();
  for (const c of callers) {
    names.set(c.name, (names.get(c.name) ?? 0) + 1);
    const other = tokens.get(c.token);
    if (other !== undefined && other !== c.name)
      problems.push(`API tokens: '${other}' and '${c.name}' have the same token: give each caller a token of its own`);
    tokens.set(c.token, c.name);
  }
  for (const [name, count] of names)
    if (count > 1) problems.push(`API tokens: caller '${name}' is given ${count} times: each name once`);
  if (problems.length > 0) throw new ConfigError(problems);
  return callers;
}

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

  /** Server-Sent Event streams served at once, in all (each holds NATS subscriptions while its run goes on). */
  @IsInt({ message: 'expected a whole number from 1' })
  @Min(1, { message: 'expected a whole number from 1' })
  httpMaxStreams = 200;

  /** Streams one API caller may hold open at once: a runaway client cannot take every slot. */
  @IsInt({ message: 'expected a whole number from 1' })
  @Min(1, { message: 'expected a whole number from 1' })
  httpMaxStreamsPerCaller = 50;

  /** The one-token form of `apiTokens` (its caller is named `api-token`). */
  @IsOptional()
  @MinLength(16, { message: 'expected a secret of at least 16 characters' })
  apiToken?: string;

  /**
   * Every HTTP caller: a name (recorded in the audit and the request log) and its token, from
   * GRANULE_API_TOKEN, GRANULE_API_TOKENS and GRANULE_API_TOKENS_FILE. None: the HTTP API is off
   * (never open without a token), and a GRANULE_HTTP_HOST beyond loopback is refused.
   */
  apiTokens: readonly ApiCaller[] = [];

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
  // apiTokens is no one variable: it is read below, from three.
  const fields: Record<Exclude<keyof ConfigStoreConfig, 'apiTokens'> & string, EnvField> = {
    ...NATS_ENV,
    databaseUrl: 'GRANULE_DATABASE_URL',
    httpHost: 'GRANULE_HTTP_HOST',
    httpPort: { name: 'GRANULE_HTTP_PORT', type: 'number' },
    httpMaxStreams: { name: 'GRANULE_HTTP_MAX_STREAMS', type: 'number' },
    httpMaxStreamsPerCaller: { name: 'GRANULE_HTTP_MAX_STREAMS_PER_CALLER', type: 'number' },
    apiToken: { name: 'GRANULE_API_TOKEN', secret: true },
    preinstalledRelease: 'GRANULE_PREINSTALLED_RELEASE',
    createDatabase: { name: 'GRANULE_DATABASE_CREATE', type: 'boolean' },
    runMigrations: { name: 'GRANULE_RUN_MIGRATIONS', type: 'boolean' },
    healthPort: { name: 'GRANULE_HEALTH_PORT', type: 'number' },
    secretsPublicKey: 'GRANULE_SECRETS_PUBLIC_KEY',
  };
  const config = loadEnvConfig(ConfigStoreConfig, env, fields as Record<keyof ConfigStoreConfig & string, EnvField>);
  const problem = config.secretsPublicKey === undefined ? undefined : secretsPublicKeyProblem(config.secretsPublicKey);
  if (problem) throw new ConfigError([`GRANULE_SECRETS_PUBLIC_KEY: ${problem}`]);
  config.apiTokens = Object.freeze(apiCallersOf(env, config.apiToken));
  // Beyond loopback the HTTP API is reachable from the network: it never starts there without a token.
  if (config.apiTokens.length === 0 && !isLoopbackHost(config.httpHost))
    throw new ConfigError([
      `GRANULE_HTTP_HOST: ${config.httpHost} is beyond loopback and no API token is set: set GRANULE_API_TOKEN, GRANULE_API_TOKENS or GRANULE_API_TOKENS_FILE, or listen on 127.0.0.1`,
    ]);
  config.preinstalledRelease =
    preinstall !== undefined && preinstall.trim() === '' ? '' : path.resolve(cwd, config.preinstalledRelease);
  return Object.freeze(config);
}
