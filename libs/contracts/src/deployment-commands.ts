/**
 * Operator commands to the orchestrator, as plain types. Their class-validator DTOs (used at
 * the transport edge) are in `@granule/contracts/dto`, so domain code can use these types
 * without loading a validation framework.
 */

/** Ids are used in subjects and stream ids: letters, digits, `_` and `-` only. */
export const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** The subgraph filters of seed 002 (`--start`, `--end`, `--skip`, `--only`, `--node`), as the planner takes them. */
export type { PlanFilters } from '@granule/planner';
import type { PlanFilters } from '@granule/planner';
import type { Reply } from './reply';

/** Plan inputs given inline (no config-store): task records per graph, nodes, cluster data. */
export interface InlinePlanInput {
  graphs: Record<string, unknown[]>;
  nodes: unknown[];
  cluster?: Record<string, unknown>;
}

/**
 * Plan inputs (an `InlinePlanInput` as JSON) kept in the inputs object store because the
 * command would not fit in one NATS message: `name` is the SHA-256 of the stored bytes (hex),
 * which every reader checks.
 */
export interface StoredInputsRef {
  name: string;
  size: number;
}

export interface StrategyRef {
  name?: string;
  inline?: Record<string, unknown>;
}

/** StartDeployment: plan environment `envId` (or the inline inputs) and run it. */
export interface StartDeployment {
  commandId: string;
  /** Chosen by the client so it can print it at once; a reused id is refused. */
  runId: string;
  envId?: string;
  inline?: InlinePlanInput;
  /** The inline inputs, stored (too large for the command): exclusive with `inline` and `envId`. */
  inputs?: StoredInputsRef;
  graph: string;
  filters?: PlanFilters;
  strategy?: StrategyRef;
  dryRun: boolean;
  noop: boolean;
  /**
   * Check mode (ADR 0031): run the plan on the agents without changing the hosts and report per
   * task whether it would change something. Exclusive with `dryRun` and `noop`.
   */
  check?: boolean;
  /** With `check`: tasks that would change a file report the difference (bounded, `CHECK_DIFF_LIMIT_BYTES`). */
  diff?: boolean;
  /** When a node it needs is held by another run: queue until it is free instead of being refused (ADR 0024). */
  waitForLocks?: boolean;
}

export interface StopDeployment {
  commandId: string;
  runId: string;
}

export interface ResumeDeployment {
  commandId: string;
  runId: string;
  /** When a node it needs is held by another run: queue until it is free instead of being refused (ADR 0024). */
  waitForLocks?: boolean;
}

/** RetryFailed: a new run of the same plan with only the failed and dep_failed task instances (or every unfinished one). */
export interface RetryFailed {
  commandId: string;
  runId: string;
  newRunId: string;
  failedOnly: boolean;
  /** When a node it needs is held by another run: queue until it is free instead of being refused (ADR 0024). */
  waitForLocks?: boolean;
}

/**
 * A command on the command stream. `ttlSeconds`: how long after the stream stored it an
 * orchestrator may still act on it; later it is dropped and recorded as expired, never run (the
 * CLI stops waiting a little after that and says nothing happened).
 */
export type DeploymentCommand = (
  | { type: 'StartDeployment'; payload: StartDeployment }
  | { type: 'StopDeployment'; payload: StopDeployment }
  | { type: 'ResumeDeployment'; payload: ResumeDeployment }
  | { type: 'RetryFailed'; payload: RetryFailed }
) & { ttlSeconds?: number };

/** A command's time to live when it does not say (the CLI's default wait for an answer). */
export const DEFAULT_COMMAND_TTL_SECONDS = 120;
/** The longest time to live a command may ask for (a day). */
export const MAX_COMMAND_TTL_SECONDS = 86_400;

export const DEPLOYMENT_COMMAND_TYPES = [
  'StartDeployment',
  'StopDeployment',
  'ResumeDeployment',
  'RetryFailed',
] as const;
export type DeploymentCommandType = (typeof DEPLOYMENT_COMMAND_TYPES)[number];

/** What the orchestrator answers to a command, on `<prefix>.reply.cmd.<commandId>`. */
export type CommandReply = Reply<{ runId: string }>;
