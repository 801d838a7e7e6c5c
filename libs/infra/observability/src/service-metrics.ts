import { Counter, Histogram, type Registry } from 'prom-client';
import { TERMINAL_RUN_PHASES } from '@granule/run-events';
import type { TerminalRunPhase } from '@granule/run-events';

/**
 * Each service's own figures, registered on its `createMetrics` registry. Outcome labels stay
 * few and fixed (`ok` / `refused` / `failed`, task states) so a series never grows per request.
 */

/** How a request ended: answered, refused (the caller's mistake or not allowed), or failed (ours). */
export type RequestOutcome = 'ok' | 'refused' | 'failed';

/** The outcome of a reply: no error code is `ok`, `INTERNAL` is `failed`, any other code `refused`. */
export function outcomeOfCode(code: string | undefined): RequestOutcome {
  if (code === undefined) return 'ok';
  return code === 'INTERNAL' ? 'failed' : 'refused';
}

/** The outcome of an HTTP status: below 400 `ok`, 4xx `refused`, 5xx `failed`. */
export function outcomeOfStatus(status: number): RequestOutcome {
  if (status < 400) return 'ok';
  return status < 500 ? 'refused' : 'failed';
}

/** Buckets of `granule_planner_planning_seconds`: small plans take milliseconds, thousands of nodes seconds. */
export const PLANNING_SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** graph-planner's figures. */
export interface PlannerMetrics {
  /** `granule_planner_plans_total{outcome}`: plan requests answered, by outcome (`planned`, `validated`, `refused`, `failed`). */
  plans: Counter<'outcome'>;
  /** `granule_planner_planning_seconds{outcome}`: time from a plan request to its answer. */
  planningSeconds: Histogram<'outcome'>;
  /** Counts one answered plan request that took `seconds`. */
  planned(outcome: 'planned' | 'validated' | 'refused' | 'failed', seconds: number): void;
}

export function registerPlannerMetrics(registry: Registry): PlannerMetrics {
  const plans = new Counter({
    name: 'granule_planner_plans_total',
    help: 'Plan requests answered, by outcome (planned, validated, refused, failed).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const planningSeconds = new Histogram({
    name: 'granule_planner_planning_seconds',
    help: 'Seconds from a plan request to its answer.',
    labelNames: ['outcome'],
    buckets: PLANNING_SECONDS_BUCKETS,
    registers: [registry],
  });
  return {
    plans,
    planningSeconds,
    planned(outcome, seconds) {
      plans.inc({ outcome });
      planningSeconds.observe({ outcome }, seconds);
    },
  };
}

/** Request counters of a service with an API (config-store: HTTP and NATS). */
export interface RequestMetrics {
  /** `granule_requests_total{transport,route,outcome}`: `route` is the NATS pattern or `METHOD /path/:param`. */
  requests: Counter<'transport' | 'route' | 'outcome'>;
  /** `granule_request_duration_seconds{transport,route}`. */
  duration: Histogram<'transport' | 'route'>;
  answered(transport: 'http' | 'nats', route: string, outcome: RequestOutcome, seconds: number): void;
}

export function registerRequestMetrics(registry: Registry): RequestMetrics {
  const requests = new Counter({
    name: 'granule_requests_total',
    help: 'Requests answered, by transport (http, nats), route and outcome (ok, refused, failed).',
    labelNames: ['transport', 'route', 'outcome'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'granule_request_duration_seconds',
    help: 'Seconds from a request to its answer.',
    labelNames: ['transport', 'route'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  });
  return {
    requests,
    duration,
    answered(transport, route, outcome, seconds) {
      requests.inc({ transport, route, outcome });
      duration.observe({ transport, route }, seconds);
    },
  };
}

/** Buckets of `granule_agent_task_duration_seconds`: a shell step takes a second, a puppet run many minutes. */
export const TASK_DURATION_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

/** Outcome of an artifact fetch: fetched, found in the agent's cache, or failed. */
export type ArtifactFetchOutcome = 'fetched' | 'cached' | 'failed';

/**
 * The port an agent's artifact fetcher counts through (`granule_agent_artifact_fetches_total`):
 * call it once per artifact a task needs.
 */
export interface ArtifactFetchCounter {
  artifactFetched(outcome: ArtifactFetchOutcome): void;
}

/** A node-agent's figures. */
export interface AgentMetrics extends ArtifactFetchCounter {
  /** `granule_agent_tasks_total{type,outcome}`: tasks this agent finished, by task type and final state. */
  tasks: Counter<'type' | 'outcome'>;
  /** `granule_agent_task_duration_seconds{type,outcome}`: from the start of a task to its outcome. */
  taskDuration: Histogram<'type' | 'outcome'>;
  /** `granule_agent_artifact_fetches_total{outcome}`. */
  artifactFetches: Counter<'outcome'>;
  /** Counts one finished task of `type` in `outcome` (succeeded, failed, timed_out, skipped, ...) that ran `seconds`. */
  taskFinished(type: string, outcome: string, seconds: number): void;
}

export function registerAgentMetrics(registry: Registry): AgentMetrics {
  const tasks = new Counter({
    name: 'granule_agent_tasks_total',
    help: 'Tasks this agent finished, by task type and outcome.',
    labelNames: ['type', 'outcome'],
    registers: [registry],
  });
  const taskDuration = new Histogram({
    name: 'granule_agent_task_duration_seconds',
    help: 'Seconds from the start of a task to its outcome, by task type and outcome.',
    labelNames: ['type', 'outcome'],
    buckets: TASK_DURATION_BUCKETS,
    registers: [registry],
  });
  const artifactFetches = new Counter({
    name: 'granule_agent_artifact_fetches_total',
    help: 'Artifacts fetched for tasks, by outcome (fetched, cached, failed).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  // Zero series from the start, so rate() works from the first failure on.
  for (const outcome of ['fetched', 'cached', 'failed']) artifactFetches.inc({ outcome }, 0);
  return {
    tasks,
    taskDuration,
    artifactFetches,
    taskFinished(type, outcome, seconds) {
      tasks.inc({ type, outcome });
      taskDuration.observe({ type, outcome }, Math.max(0, seconds));
    },
    artifactFetched(outcome) {
      artifactFetches.inc({ outcome });
    },
  };
}

/** How a run ended, as `granule_runs_ended_total` labels it: the phase its terminal event gives. */
export type RunEndOutcome = TerminalRunPhase;

/** The orchestrator's counters (beside `granule_runs` and the task metrics of `createMetrics`). */
export interface OrchestratorMetrics {
  /** `granule_runs_started_total`: runs requested (DeploymentRequested). */
  runsStarted: Counter;
  /** `granule_runs_ended_total{outcome}`: runs ended, by outcome. */
  runsEnded: Counter<'outcome'>;
  /** `granule_task_dispatches_total`: task attempts dispatched to agents (TaskDispatched). */
  dispatches: Counter;
  /** `granule_commands_total{command,outcome}`: commands answered by this replica: `accepted`, `refused`, `failed` (ours), `expired`. */
  commands: Counter<'command' | 'outcome'>;
}

export function registerOrchestratorMetrics(registry: Registry): OrchestratorMetrics {
  return {
    runsStarted: new Counter({
      name: 'granule_runs_started_total',
      help: 'Deployment runs requested (DeploymentRequested events).',
      registers: [registry],
    }),
    runsEnded: new Counter({
      name: 'granule_runs_ended_total',
      help: `Deployment runs ended, by outcome (${TERMINAL_RUN_PHASES.join(', ')}).`,
      labelNames: ['outcome'],
      registers: [registry],
    }),
    dispatches: new Counter({
      name: 'granule_task_dispatches_total',
      help: 'Task attempts dispatched to agents (TaskDispatched events).',
      registers: [registry],
    }),
    commands: new Counter({
      name: 'granule_commands_total',
      help: 'Commands this replica answered, by command and outcome (accepted, refused, failed, expired).',
      labelNames: ['command', 'outcome'],
      registers: [registry],
    }),
  };
}
