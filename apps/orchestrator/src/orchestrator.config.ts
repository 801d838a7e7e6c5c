import { hostname } from 'node:os';
import { IsBoolean, IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import { DEFAULT_TASK_LOG_LIMIT_BYTES, TASK_LOG_LIMIT_BOUNDS } from '@granule/contracts';
import { secretsKeyProblem } from '@granule/secrets';
import { ConfigError, loadEnvConfig, NATS_ENV, NatsSettings } from '@granule/service-kit';

/** The orchestrator's settings; `loadOrchestratorConfig` is the only reader of the environment. */
export class OrchestratorConfig extends NatsSettings {
  @Matches(/^redis(s)?:\/\/\S+$/, { message: 'must be a redis:// URL' }) redisUrl = 'redis://127.0.0.1:6379';
  @Matches(/^postgres(ql)?:\/\/\S+$/, { message: 'must be a postgres:// URL' }) databaseUrl =
    'postgres://postgres@127.0.0.1:5432/granule';
  @IsInt() @Min(1) @Max(100000) maxBusyNodes = 200;
  /** Plans kept in memory for the runs that load them again (least recently used dropped first). */
  @IsInt() @Min(1) @Max(100000) maxCachedPlans = 64;
  @IsInt() @Min(50) @Max(60000) tickMs = 1000;
  @IsInt() @Min(1000) @Max(600000) leaseMs = 15000;
  @IsInt() @Min(1) @Max(3600) heartbeatSeconds = 2;
  @IsInt() @Min(2) @Max(7200) presenceTtlSeconds = 6;
  @IsOptional() @IsString() agentToken?: string;
  @IsBoolean() runMigrations = false;
  /** Keep config-store's node statuses in step with the event log (NodeStatusProjector). */
  @IsBoolean() nodeStatusSync = true;
  /**
   * The replica's stable name (the pod name in Helm): a lease it held before a restart is taken
   * back at once (ADR 0028). Each process adds an incarnation of its own to it.
   */
  @Matches(/^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/, {
    message: 'must be letters, digits, ".", "_" and "-" (a pod or host name), at most 253 characters',
  })
  instanceId = `orchestrator-${hostname()}`;
  @IsString() logLevel = 'info';
  /** `/healthz`, `/readyz` and `/metrics`; 0 turns them off. */
  @IsInt() @Min(0) @Max(65535) healthPort = 8413;
  /** Task output kept per try (ADR 0030): agents send no more, the log writer keeps no more. */
  @IsInt() @Min(TASK_LOG_LIMIT_BOUNDS.min) @Max(TASK_LOG_LIMIT_BOUNDS.max) taskLogLimitBytes =
    DEFAULT_TASK_LOG_LIMIT_BYTES;
  /** The installation's private key (seed), which opens sealed secrets at dispatch (ADR 0023). */
  @IsOptional() @IsString() secretsKey?: string;
}

export function loadOrchestratorConfig(env: Record<string, string | undefined>): OrchestratorConfig {
  const config = loadEnvConfig(OrchestratorConfig, env, {
    ...NATS_ENV,
    redisUrl: 'GRANULE_REDIS_URL',
    databaseUrl: 'GRANULE_DATABASE_URL',
    maxBusyNodes: { name: 'GRANULE_MAX_BUSY_NODES', type: 'number' },
    maxCachedPlans: { name: 'GRANULE_MAX_CACHED_PLANS', type: 'number' },
    tickMs: { name: 'GRANULE_TICK_MS', type: 'number' },
    leaseMs: { name: 'GRANULE_LEASE_MS', type: 'number' },
    heartbeatSeconds: { name: 'GRANULE_HEARTBEAT_SECONDS', type: 'number' },
    presenceTtlSeconds: { name: 'GRANULE_PRESENCE_TTL_SECONDS', type: 'number' },
    agentToken: 'GRANULE_AGENT_TOKEN',
    runMigrations: { name: 'GRANULE_RUN_MIGRATIONS', type: 'boolean' },
    nodeStatusSync: { name: 'GRANULE_NODE_STATUS_SYNC', type: 'boolean' },
    instanceId: 'GRANULE_INSTANCE_ID',
    logLevel: 'GRANULE_LOG_LEVEL',
    healthPort: { name: 'GRANULE_HEALTH_PORT', type: 'number' },
    secretsKey: { name: 'GRANULE_SECRETS_KEY', secret: true },
    taskLogLimitBytes: { name: 'GRANULE_TASK_LOG_LIMIT_BYTES', type: 'number' },
  });
  const problem = config.secretsKey === undefined ? undefined : secretsKeyProblem(config.secretsKey);
  if (problem) throw new ConfigError([`GRANULE_SECRETS_KEY: ${problem}`]);
  return config;
}

/**
 * What is allowed but unsafe in `config`, one line each for the log at start: a Redis URL
 * without a password (issue 20: every service that uses Redis authenticates; the presence keys
 * and run leases there decide which nodes are online and who drives a run).
 */
export function configWarnings(config: OrchestratorConfig): string[] {
  const warnings: string[] = [];
  let password = '';
  try {
    password = new URL(config.redisUrl).password;
  } catch {
    // The URL was checked by its pattern; one that URL cannot read has no password we can see.
  }
  if (password === '')
    warnings.push(
      'GRANULE_REDIS_URL has no password: anyone who reaches Redis can forge node presence and take run leases; ' +
        'give Redis a password (requirepass) or an ACL user, and put it in the URL',
    );
  return warnings;
}
