import type { TaskType } from '@granule/task-model';
import type { Reply } from './reply';

/**
 * Orchestrator → agent, on `<prefix>.dispatch.<node>` (JetStream). The message id and the
 * agent's idempotency key are both `dispatchId` = `<run>/<task>@<node>/<attempt>`.
 */
export interface TaskDispatchMessage {
  runId: string;
  key: string;
  task: string;
  node: string;
  type: TaskType;
  parameters: Record<string, unknown>;
  attempt: number;
  dispatchId: string;
  /** Change nothing on the host (Fuel's noop: puppet `--noop`, rsync `--dry-run`, other tasks only say what they would do). Always set with `check`. */
  noop: boolean;
  /**
   * Check mode (ADR 0031): change nothing (as `noop`, which comes with it) and report whether the
   * task would change something (`TaskProgressMessage.check`); check-safe shell tasks run.
   */
  check?: boolean;
  /** With `check`: report the difference a file task or puppet would make. */
  diff?: boolean;
  /**
   * Where `parameters` held sealed values that the orchestrator opened for this one dispatch
   * (key paths, e.g. `['env', 'DB_PASSWORD']`): the agent masks their values in the task's output.
   * Absent when the task has no secret.
   */
  secretPaths?: (string | number)[][];
  /**
   * Output the control plane keeps per try (ADR 0030): the agent sends no more than this and
   * marks the cut. Absent: `DEFAULT_TASK_LOG_LIMIT_BYTES`.
   */
  logLimitBytes?: number;
}

/** Agent → anyone watching, on `<prefix>.output.<run>.<node>` (core NATS, best effort). */
export interface TaskOutputMessage {
  runId: string;
  key: string;
  node: string;
  stream: 'stdout' | 'stderr';
  seq: number;
  data: string;
}

/** Agent → orchestrator on `<prefix>.agent.register` (request/reply). */
export interface AgentRegistration {
  uid: string;
  hostname: string;
  address: string;
  agentVersion: string;
  /** Shared secret from the agent's config; checked by the orchestrator. */
  token?: string;
}

/** What the orchestrator tells an agent it registered: seconds between heartbeats and the presence TTL it watches. */
export interface AgentRegistered {
  heartbeatSeconds: number;
  presenceTtlSeconds: number;
}

/** graph-planner request on `<prefix>.planner.plan`. */
export interface PlanRequestMessage {
  runId?: string;
  envId?: string;
  inline?: { graphs: Record<string, unknown[]>; nodes: unknown[]; cluster?: Record<string, unknown> };
  /** The inline inputs, kept in the inputs object store (`StoredInputsRef`). */
  inputs?: { name: string; size: number };
  graph: string;
  filters?: Record<string, unknown>;
  /**
   * Plan and check only, store nothing (`planId` is then empty): the CLI asks this before it
   * sends a deploy whose filters name tasks or nodes, so a typo is refused before a run is recorded.
   */
  validateOnly?: boolean;
}

/** A stored plan, as graph-planner answers a plan request. */
export interface PlannedMessage {
  planId: string;
  planHash: string;
  instances: number;
  tasks: number;
  nodes: string[];
}

/** graph-planner's answer: the stored plan, or the refusal (the same code and message `granule plan` gives). */
export type PlanReplyMessage = Reply<PlannedMessage>;

/**
 * Agent → orchestrator on `<prefix>.alert.<node>` (core NATS): a dispatch this agent did not run
 * because the orchestrator did not issue it (its signature is missing or not the orchestrator's).
 */
export interface DispatchRefusedAlert {
  node: string;
  subject: string;
  /** What the message said it was (unverified). */
  runId?: string;
  dispatchId?: string;
  reason: string;
  at: string;
}

/**
 * Agent → orchestrator on `<prefix>.agent.heartbeat.<node>` (core NATS) every heartbeat: the
 * orchestrator keeps the node's presence key in Redis from it (agents reach only NATS). The node
 * is the one the subject names (NATS lets an agent publish only its own); `leaving` on a
 * graceful stop removes the key at once.
 */
export interface AgentHeartbeat {
  uid: string;
  at: string;
  leaving?: boolean;
}
