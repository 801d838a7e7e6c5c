import * as path from 'node:path';
import { DEFAULT_ARTIFACT_CACHE_BYTES } from '@granule/artifacts';
import { IDENTIFIER_RULES } from '@granule/core';
import { ConfigError, loadEnvConfig, NATS_ENV, NatsSettings } from '@granule/service-kit/config';
import {
  DEFAULT_REBOOT_COMMAND,
  DEFAULT_STATE_DIR_NAME,
  SPAWN_HELPER_CHOICES,
  type SpawnHelperChoice,
} from '@granule/task-runners';
import { IsIn, IsInt, IsNotEmpty, IsOptional, IsString, Matches, Max, Min } from 'class-validator';

export const AGENT_LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;
export type AgentLogLevel = (typeof AGENT_LOG_LEVELS)[number];

/** What the host says about itself; the defaults of GRANULE_AGENT_HOSTNAME / _ADDRESS. */
export interface HostFacts {
  hostname: string;
  /** First non-internal IPv4 address, if the host has one. */
  address?: string;
}

/** The node-agent's variables, validated by service-kit's one config loader. */
export class AgentSettings extends NatsSettings {
  @IsNotEmpty({ message: 'must be set to the uid of this node as the plan names it' })
  @Matches(IDENTIFIER_RULES.nodeUid.pattern, { message: `must be a node uid of ${IDENTIFIER_RULES.nodeUid.rule}` })
  nodeUid!: string;

  @IsNotEmpty({ message: 'must be set to the absolute directory the agent works in' })
  @Matches(/^\//, { message: 'must be an absolute path' })
  root!: string;

  @Matches(/^\//, { each: true, message: 'must be a comma-separated list of absolute paths' })
  allowedRoots: string[] = [];

  /** The registration secret of a NATS without authentication (with a credential, the credential proves the node). */
  @IsOptional() @IsString() agentToken?: string;

  @IsInt({ message: 'must be a whole number of seconds' })
  @Min(1, { message: 'must be at least 1' })
  @Max(3600, { message: 'must be at most 3600' })
  heartbeatSeconds = 2;

  @IsNotEmpty({ message: 'must not be empty' })
  rebootCommand = DEFAULT_REBOOT_COMMAND;

  @IsOptional() @IsNotEmpty({ message: 'must not be empty' }) hostname?: string;

  @IsOptional() @IsNotEmpty({ message: 'must not be empty' }) address?: string;

  @IsIn(AGENT_LOG_LEVELS, { message: `must be one of ${AGENT_LOG_LEVELS.join(', ')}` })
  logLevel: AgentLogLevel = 'info';

  @IsInt({ message: 'must be a port number, 0 turns the health server off' })
  @Min(0, { message: 'must be a port number, 0 turns the health server off' })
  @Max(65535, { message: 'must be a port number, 0 turns the health server off' })
  healthPort = 8414;

  @IsIn(SPAWN_HELPER_CHOICES, { message: `must be one of ${SPAWN_HELPER_CHOICES.join(', ')}` })
  spawnHelper: SpawnHelperChoice = 'auto';

  @IsInt({ message: 'must be a whole number of MiB' })
  @Min(1, { message: 'must be at least 1' })
  @Max(1024 * 1024, { message: 'must be at most 1048576 (1 TiB)' })
  artifactCacheMb = DEFAULT_ARTIFACT_CACHE_BYTES / 1024 ** 2;
}

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
  subjectPrefix: string;
  natsCreds?: string;
  natsTlsCa?: string;
  natsTlsCert?: string;
  natsTlsKey?: string;
  agentToken?: string;
  heartbeatSeconds: number;
  rebootCommand: string;
  hostname: string;
  address: string;
  logLevel: AgentLogLevel;
  /** Port of `/healthz`, `/readyz` and `/metrics`; 0: off. */
  healthPort: number;
  /** What starts task processes: the native helper, Node.js's child_process in the agent, or `auto` (native when built). */
  spawnHelper: SpawnHelperChoice;
  /** What the agent's package copies may take on disk (least recently used go first). */
  artifactCacheBytes: number;
}

/** The environment variable of each setting, all in one place. */
export const AGENT_ENV = {
  ...NATS_ENV,
  nodeUid: 'GRANULE_NODE_UID',
  root: 'GRANULE_ROOT',
  allowedRoots: { name: 'GRANULE_ALLOWED_ROOTS', type: 'list' },
  agentToken: { name: 'GRANULE_AGENT_TOKEN', secret: true },
  heartbeatSeconds: { name: 'GRANULE_HEARTBEAT_SECONDS', type: 'number' },
  rebootCommand: 'GRANULE_REBOOT_COMMAND',
  hostname: 'GRANULE_AGENT_HOSTNAME',
  address: 'GRANULE_AGENT_ADDRESS',
  logLevel: 'GRANULE_LOG_LEVEL',
  healthPort: { name: 'GRANULE_HEALTH_PORT', type: 'number' },
  spawnHelper: 'GRANULE_SPAWN_HELPER',
  artifactCacheMb: { name: 'GRANULE_ARTIFACT_CACHE_MB', type: 'number' },
} as const;

/** The names of the variables the agent reads (its main copies only these from the environment). */
export const AGENT_ENV_VARS: readonly string[] = Object.values(AGENT_ENV).map((f) =>
  typeof f === 'string' ? f : f.name,
);

/**
 * Reads and checks the agent's variables from `env` (a snapshot of the process environment)
 * and fills in the defaults. Throws service-kit's `ConfigError` listing every problem found.
 */
export function loadAgentConfig(env: Readonly<Record<string, string | undefined>>, host: HostFacts): AgentConfig {
  const s = loadEnvConfig(AgentSettings, env, AGENT_ENV);
  // Checked once every value is well-formed.
  const problems: string[] = [];
  const address = s.address ?? host.address;
  if (!address)
    problems.push('GRANULE_AGENT_ADDRESS: must be set (no non-internal IPv4 address was found to default to)');
  if (problems.length > 0) throw new ConfigError(problems);
  const rootDir = path.resolve(s.root);
  const allowed = s.allowedRoots.map((p) => path.resolve(p));
  return {
    nodeUid: s.nodeUid,
    rootDir,
    stateDir: path.join(rootDir, DEFAULT_STATE_DIR_NAME),
    allowedRoots: allowed.length > 0 ? allowed : [rootDir],
    natsUrl: s.natsUrl,
    subjectPrefix: s.subjectPrefix,
    ...(s.natsCreds ? { natsCreds: s.natsCreds } : {}),
    ...(s.natsTlsCa ? { natsTlsCa: s.natsTlsCa } : {}),
    ...(s.natsTlsCert ? { natsTlsCert: s.natsTlsCert } : {}),
    ...(s.natsTlsKey ? { natsTlsKey: s.natsTlsKey } : {}),
    agentToken: s.agentToken,
    heartbeatSeconds: s.heartbeatSeconds,
    rebootCommand: s.rebootCommand,
    hostname: s.hostname ?? host.hostname,
    address: address as string,
    logLevel: s.logLevel,
    healthPort: s.healthPort,
    spawnHelper: s.spawnHelper,
    artifactCacheBytes: s.artifactCacheMb * 1024 ** 2,
  };
}
