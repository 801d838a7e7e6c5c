/** Injection tokens of what `main.ts` opens before Nest starts (a bad URL is one clear line, not a Nest stack trace). */
export const NATS = Symbol('NATS');
export const REDIS = Symbol('REDIS');
export const DATA_SOURCE = Symbol('DATA_SOURCE');
export const LOGGER = Symbol('LOGGER');
/** The orchestrator's counters on /metrics (`OrchestratorMetrics`). */
export const METRICS = Symbol('METRICS');
/** This process's lease holder identity: the replica's name and this incarnation. */
export const LEASE_HOLDER = Symbol('LEASE_HOLDER');
/** The coordinators' ports (event log, plans, dispatcher, presence, lease, clock, logger). */
export const COORDINATOR_PORTS = Symbol('COORDINATOR_PORTS');
/** The Granule metrics registry of /metrics (`GranuleMetrics`), which the run metrics feed keeps. */
export const GRANULE_METRICS = Symbol('GRANULE_METRICS');
/** The opener of sealed secrets (`SecretOpener`), or null without `GRANULE_SECRETS_KEY`. */
export const SECRET_OPENER = Symbol('SECRET_OPENER');
