/**
 * Health, readiness and Prometheus metrics for the Granule services: a small node:http server
 * (`/healthz`, `/readyz`, `/metrics`), readiness checks for NATS, PostgreSQL and Redis, and the
 * Granule metrics registry.
 */
export {
  DEFAULT_HEALTH_PORTS,
  HealthServerError,
  createHealthHandler,
  serveHealthChecks,
  startHealthServer,
} from './health-server';
export type { HealthEndpointsOptions, HealthHandler, HealthServer, HealthServerOptions } from './health-server';
export { DEFAULT_CHECK_TIMEOUT_MS, natsCheck, postgresCheck, redisCheck, runReadinessChecks } from './readiness-checks';
export type { CheckResult, ReadinessCheck, ReadinessReport } from './readiness-checks';
export { DEFAULT_EVENT_LOOP_PRECISION_MS, DISPATCH_TO_START_BUCKETS, createMetrics } from './granule-metrics';
export type { CreateMetricsOptions, GranuleMetrics, MetricsCollector } from './granule-metrics';
export { RepeatedFailureLog } from './repeated-failure-log';
export type { FailureLogger, RepeatedFailureLogOptions } from './repeated-failure-log';
export {
  PLANNING_SECONDS_BUCKETS,
  TASK_DURATION_BUCKETS,
  outcomeOfCode,
  outcomeOfStatus,
  registerAgentMetrics,
  registerOrchestratorMetrics,
  registerPlannerMetrics,
  registerRequestMetrics,
} from './service-metrics';
export type {
  AgentMetrics,
  ArtifactFetchCounter,
  ArtifactFetchOutcome,
  OrchestratorMetrics,
  PlannerMetrics,
  RequestMetrics,
  RequestOutcome,
  RunEndOutcome,
} from './service-metrics';
