import * as path from 'node:path';
import { GranuleError, IDENTIFIER_RULES, identifierProblem } from '@granule/core';
import { DEFAULT_SUBJECT_PREFIX } from '@granule/contracts';
import {
  DEFAULT_REBOOT_COMMAND,
  DEFAULT_STATE_DIR_NAME,
  SPAWN_HELPER_CHOICES,
  type SpawnHelperChoice,
} from '@granule/task-runners';
import {
  IsIn,
  IsInt,
  IsNotEmpty,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  Min,
  validateSync,
  type ValidationError,
} from 'class-validator';

/** The node-agent's settings, read once from the environment at start. */
export interface AgentConfig {
  nodeUid: string;
  /** Absolute; relative task paths resolve here; created at start when missing. */
  rootDir: string;
  /** `<rootDir>/.granule`: task journal, agent state, puppet state. */
  stateDir: string;
  /** Absolute directories file tasks may write under. */
  allowedRoots: string[];
  natsUrl: string;
  redisUrl: string;
  subjectPrefix: string;
  agentToken?: string;
  heartbeatSeconds: number;
  presenceTtlSeconds: number;
  rebootCommand: string;
  hostname: string;
  address: string;
  logLevel: AgentLogLevel;
  /** Port of `/healthz`, `/readyz` and `/metrics`; 0: off. */
  healthPort: number;
  /** What starts task processes: the native helper, Node.js's child_process in the agent, or `auto` (native when built). */
  spawnHelper: SpawnHelperChoice;
}

export const AGENT_LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;
export type AgentLogLevel = (typeof AGENT_LOG_LEVELS)[number];

/** What the host says about itself; the defaults of GRANULE_AGENT_HOSTNAME / _ADDRESS. */
export interface HostFacts {
  hostname: string;
  /** First non-internal IPv4 address, if the host has one. */
  address?: string;
}

/** The environment variables the agent reads, all in one place. */
export const AGENT_ENV_VARS = [
  'GRANULE_NODE_UID',
  'GRANULE_ROOT',
  'GRANULE_ALLOWED_ROOTS',
  'GRANULE_NATS_URL',
  'GRANULE_REDIS_URL',
  'GRANULE_SUBJECT_PREFIX',
  'GRANULE_AGENT_TOKEN',
  'GRANULE_HEARTBEAT_SECONDS',
  'GRANULE_PRESENCE_TTL_SECONDS',
  'GRANULE_REBOOT_COMMAND',
  'GRANULE_AGENT_HOSTNAME',
  'GRANULE_AGENT_ADDRESS',
  'GRANULE_LOG_LEVEL',
  'GRANULE_HEALTH_PORT',
  'GRANULE_SPAWN_HELPER',
] as const;

export const AGENT_CONFIG_DEFAULTS = Object.freeze({
  natsUrl: 'nats://127.0.0.1:4222',
  redisUrl: 'redis://127.0.0.1:6379',
  subjectPrefix: DEFAULT_SUBJECT_PREFIX,
  heartbeatSeconds: 2,
  presenceTtlSeconds: 6,
  rebootCommand: DEFAULT_REBOOT_COMMAND,
  logLevel: 'info' as AgentLogLevel,
  healthPort: 8414,
  spawnHelper: 'auto' as SpawnHelperChoice,
});

/** The configuration is unusable; `problems` names every bad variable. */
export class AgentConfigError extends GranuleError<'AGENT_CONFIG_INVALID'> {
  constructor(readonly problems: string[]) {
    super('AGENT_CONFIG_INVALID', `invalid configuration: ${problems.join('; ')}`);
  }
}

const got = (value: unknown): string => (value === undefined ? 'it is not set' : `got ${JSON.stringify(value)}`);
const absolute = (value: unknown): boolean => typeof value === 'string' && path.isAbsolute(value);

// Property names are the variable names, so class-validator's messages name what to fix.
class AgentEnvironment {
  @Matches(IDENTIFIER_RULES.nodeUid.pattern, {
    message: (a) =>
      a.value === undefined
        ? `GRANULE_NODE_UID: expected a node uid of ${IDENTIFIER_RULES.nodeUid.rule} (${got(a.value)})`
        : `GRANULE_NODE_UID: ${identifierProblem('nodeUid', a.value)}`,
  })
  GRANULE_NODE_UID?: string;

  @IsNotEmpty({ message: 'GRANULE_ROOT is required: the directory the agent works in' })
  @Matches(/^\//, { message: (a) => `GRANULE_ROOT must be an absolute path (${got(a.value)})` })
  GRANULE_ROOT?: string;

  @Matches(/^\//, {
    each: true,
    message: (a) => `GRANULE_ALLOWED_ROOTS must be a comma-separated list of absolute paths (${got(a.value)})`,
  })
  GRANULE_ALLOWED_ROOTS: string[] = [];

  @IsUrl(
    {
      protocols: ['nats', 'tls', 'ws', 'wss'],
      require_protocol: true,
      require_tld: false,
      require_valid_protocol: true,
    },
    {
      each: true,
      message: (a) => `GRANULE_NATS_URL must be nats://host:port (or a comma-separated list) (${got(a.value)})`,
    },
  )
  GRANULE_NATS_URL: string[] = [];

  @IsUrl(
    { protocols: ['redis', 'rediss'], require_protocol: true, require_tld: false, require_valid_protocol: true },
    { message: (a) => `GRANULE_REDIS_URL must be redis://[:password@]host:port[/db] (${got(a.value)})` },
  )
  GRANULE_REDIS_URL = '';

  @Matches(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, {
    message: (a) => `GRANULE_SUBJECT_PREFIX must be dotted words of letters, digits, '_' or '-' (${got(a.value)})`,
  })
  GRANULE_SUBJECT_PREFIX = '';

  @IsOptional()
  @IsString()
  GRANULE_AGENT_TOKEN?: string;

  @IsInt({ message: (a) => `GRANULE_HEARTBEAT_SECONDS must be a whole number of seconds (${got(a.value)})` })
  @Min(1, { message: (a) => `GRANULE_HEARTBEAT_SECONDS must be at least 1 (${got(a.value)})` })
  @Max(3600, { message: (a) => `GRANULE_HEARTBEAT_SECONDS must be at most 3600 (${got(a.value)})` })
  GRANULE_HEARTBEAT_SECONDS: unknown;

  @IsInt({ message: (a) => `GRANULE_PRESENCE_TTL_SECONDS must be a whole number of seconds (${got(a.value)})` })
  @Min(2, { message: (a) => `GRANULE_PRESENCE_TTL_SECONDS must be at least 2 (${got(a.value)})` })
  GRANULE_PRESENCE_TTL_SECONDS: unknown;

  @IsNotEmpty({ message: 'GRANULE_REBOOT_COMMAND must not be empty' })
  GRANULE_REBOOT_COMMAND = '';

  @IsNotEmpty({ message: 'GRANULE_AGENT_HOSTNAME must not be empty' })
  GRANULE_AGENT_HOSTNAME = '';

  @IsNotEmpty({
    message: 'GRANULE_AGENT_ADDRESS must not be empty (no non-internal IPv4 address was found to default to)',
  })
  GRANULE_AGENT_ADDRESS = '';

  @IsIn(AGENT_LOG_LEVELS, {
    message: (a) => `GRANULE_LOG_LEVEL must be one of ${AGENT_LOG_LEVELS.join(', ')} (${got(a.value)})`,
  })
  GRANULE_LOG_LEVEL = '';

  @IsInt({
    message: (a) => `GRANULE_HEALTH_PORT must be a port number, 0 turns the health server off (${got(a.value)})`,
  })
  @Min(0, {
    message: (a) => `GRANULE_HEALTH_PORT must be a port number, 0 turns the health server off (${got(a.value)})`,
  })
  @Max(65535, {
    message: (a) => `GRANULE_HEALTH_PORT must be a port number, 0 turns the health server off (${got(a.value)})`,
  })
  GRANULE_HEALTH_PORT: unknown;

  @IsIn(SPAWN_HELPER_CHOICES, {
    message: (a) => `GRANULE_SPAWN_HELPER must be one of ${SPAWN_HELPER_CHOICES.join(', ')} (${got(a.value)})`,
  })
  GRANULE_SPAWN_HELPER = '';
}

const list = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
const orDefault = (value: string | undefined, fallback: string): string =>
  value === undefined || value.trim() === '' ? fallback : value.trim();
// "12" becomes 12; anything else stays as written so the message can quote it.
const wholeNumber = (value: string | undefined, fallback: number): unknown => {
  if (value === undefined || value.trim() === '') return fallback;
  return /^\d+$/.test(value.trim()) ? Number(value.trim()) : value;
};

/**
 * Reads and checks the agent's variables from `env` (a snapshot of the process environment)
 * and fills in the defaults. Throws `AgentConfigError` listing every problem found.
 */
export function loadAgentConfig(env: Readonly<Record<string, string | undefined>>, host: HostFacts): AgentConfig {
  const e = new AgentEnvironment();
  e.GRANULE_NODE_UID = env.GRANULE_NODE_UID?.trim();
  e.GRANULE_ROOT = env.GRANULE_ROOT?.trim();
  e.GRANULE_ALLOWED_ROOTS = list(env.GRANULE_ALLOWED_ROOTS);
  e.GRANULE_NATS_URL = list(orDefault(env.GRANULE_NATS_URL, AGENT_CONFIG_DEFAULTS.natsUrl));
  e.GRANULE_REDIS_URL = orDefault(env.GRANULE_REDIS_URL, AGENT_CONFIG_DEFAULTS.redisUrl);
  e.GRANULE_SUBJECT_PREFIX = orDefault(env.GRANULE_SUBJECT_PREFIX, AGENT_CONFIG_DEFAULTS.subjectPrefix);
  e.GRANULE_AGENT_TOKEN = env.GRANULE_AGENT_TOKEN === '' ? undefined : env.GRANULE_AGENT_TOKEN;
  e.GRANULE_HEARTBEAT_SECONDS = wholeNumber(env.GRANULE_HEARTBEAT_SECONDS, AGENT_CONFIG_DEFAULTS.heartbeatSeconds);
  e.GRANULE_PRESENCE_TTL_SECONDS = wholeNumber(
    env.GRANULE_PRESENCE_TTL_SECONDS,
    AGENT_CONFIG_DEFAULTS.presenceTtlSeconds,
  );
  e.GRANULE_REBOOT_COMMAND = orDefault(env.GRANULE_REBOOT_COMMAND, AGENT_CONFIG_DEFAULTS.rebootCommand);
  e.GRANULE_AGENT_HOSTNAME = orDefault(env.GRANULE_AGENT_HOSTNAME, host.hostname);
  e.GRANULE_AGENT_ADDRESS = orDefault(env.GRANULE_AGENT_ADDRESS, host.address ?? '');
  e.GRANULE_LOG_LEVEL = orDefault(env.GRANULE_LOG_LEVEL, AGENT_CONFIG_DEFAULTS.logLevel);
  e.GRANULE_HEALTH_PORT = wholeNumber(env.GRANULE_HEALTH_PORT, AGENT_CONFIG_DEFAULTS.healthPort);
  e.GRANULE_SPAWN_HELPER = orDefault(env.GRANULE_SPAWN_HELPER, AGENT_CONFIG_DEFAULTS.spawnHelper);

  const problems = messagesOf(validateSync(e));
  if (e.GRANULE_NODE_UID === undefined || e.GRANULE_NODE_UID === '') {
    const i = problems.findIndex((p) => p.startsWith('GRANULE_NODE_UID'));
    problems[i] = 'GRANULE_NODE_UID is required: the uid of this node as the plan names it';
  }
  const heartbeat = e.GRANULE_HEARTBEAT_SECONDS;
  const ttl = e.GRANULE_PRESENCE_TTL_SECONDS;
  if (typeof heartbeat === 'number' && typeof ttl === 'number' && Number.isInteger(heartbeat) && ttl <= heartbeat) {
    problems.push(
      `GRANULE_PRESENCE_TTL_SECONDS (${ttl}) must be greater than GRANULE_HEARTBEAT_SECONDS (${heartbeat}), or the presence key expires between beats`,
    );
  }
  if (problems.length > 0) throw new AgentConfigError(problems);

  const rootDir = path.resolve(e.GRANULE_ROOT as string);
  const allowed = e.GRANULE_ALLOWED_ROOTS.filter(absolute).map((p) => path.resolve(p));
  return {
    nodeUid: e.GRANULE_NODE_UID as string,
    rootDir,
    stateDir: path.join(rootDir, DEFAULT_STATE_DIR_NAME),
    allowedRoots: allowed.length > 0 ? allowed : [rootDir],
    natsUrl: e.GRANULE_NATS_URL.join(','),
    redisUrl: e.GRANULE_REDIS_URL,
    subjectPrefix: e.GRANULE_SUBJECT_PREFIX,
    agentToken: e.GRANULE_AGENT_TOKEN,
    heartbeatSeconds: heartbeat as number,
    presenceTtlSeconds: ttl as number,
    rebootCommand: e.GRANULE_REBOOT_COMMAND,
    hostname: e.GRANULE_AGENT_HOSTNAME,
    address: e.GRANULE_AGENT_ADDRESS,
    logLevel: e.GRANULE_LOG_LEVEL as AgentLogLevel,
    healthPort: e.GRANULE_HEALTH_PORT as number,
    spawnHelper: e.GRANULE_SPAWN_HELPER as SpawnHelperChoice,
  };
}

// One message per variable, in declaration order. Decorators apply bottom-up, so the last
// failed constraint is the top-most rule written: the most basic one ("required", "a number").
function messagesOf(errors: ValidationError[]): string[] {
  return errors.map((err) => Object.values(err.constraints ?? {}).at(-1) ?? `${err.property} is invalid`);
}
