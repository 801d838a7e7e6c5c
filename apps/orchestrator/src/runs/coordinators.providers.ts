import type { Provider } from '@nestjs/common';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Redis } from 'ioredis';
import type { DataSource } from 'typeorm';
import { ConfigStoreClient } from '@granule/config-store-client';
import { EventStore } from '@granule/event-store';
import { PlanStore } from '@granule/plan-store';
import { RunCoordinator, StrategyCoordinator } from '@granule/run-coordination';
import type { CoordinatorPorts } from '@granule/run-coordination';
import { StoredInputs } from '@granule/messaging';
import { SecretOpener } from '@granule/secrets';
import type { Logger } from '@granule/service-kit';
import { PresenceIntake } from '../agents/presence-intake';
import { OrchestratorConfig } from '../orchestrator.config';
import {
  COORDINATOR_PORTS,
  DATA_SOURCE,
  LEASE_HOLDER,
  LOGGER,
  NATS,
  REDIS,
  SECRET_OPENER,
} from '../orchestrator.tokens';
import { NatsIncarnationBeacon } from './adapters/incarnation-beacon.adapter';
import { JetStreamDispatcher } from './adapters/nats-dispatcher.adapter';
import { StoredPlanSource } from './adapters/plan-source.adapter';
import { SealedPlanCheck } from './adapters/sealed-plan-check.adapter';
import { RedisPresence } from './adapters/redis-presence.adapter';
import { RedisRunLease, type LeaseHolder } from './adapters/run-lease.adapter';
import { PostgresRunEventLog } from './adapters/run-event-log.adapter';
import { PostgresNodeLockLog } from './adapters/node-lock-log.adapter';
import { ConfigStoreStrategySource } from './adapters/strategy-source.adapter';

/**
 * The run side of the orchestrator as Nest providers: the event log and its adapters (the ports
 * of run-coordination), the dispatcher, config-store's client, and the two coordinators on the
 * one decider driver. A phase run's end reaches its strategy run in process.
 */
export const coordinatorProviders: Provider[] = [
  { provide: EventStore, useFactory: (ds: DataSource) => new EventStore(ds), inject: [DATA_SOURCE] },
  { provide: PlanStore, useFactory: (ds: DataSource) => new PlanStore(ds), inject: [DATA_SOURCE] },
  {
    // One client for the strategy source and the status projection.
    provide: ConfigStoreClient,
    useFactory: (nats: NatsConnection, config: OrchestratorConfig) =>
      new ConfigStoreClient(nats, { prefix: config.subjectPrefix }),
    inject: [NATS, OrchestratorConfig],
  },
  {
    // Shared by the plan check and the dispatcher: what the check opened is kept for the dispatches.
    provide: SECRET_OPENER,
    useFactory: (config: OrchestratorConfig): SecretOpener | null =>
      config.secretsKey ? new SecretOpener(config.secretsKey) : null,
    inject: [OrchestratorConfig],
  },
  {
    // Sealed secrets are opened only by the dispatcher, for the one agent a dispatch goes to.
    provide: JetStreamDispatcher,
    useFactory: (nats: NatsConnection, config: OrchestratorConfig, secrets: SecretOpener | null) =>
      new JetStreamDispatcher(
        nats,
        jetstream(nats),
        config.subjectPrefix,
        secrets ?? undefined,
        config.taskLogLimitBytes,
      ),
    inject: [NATS, OrchestratorConfig, SECRET_OPENER],
  },
  {
    provide: StoredPlanSource,
    useFactory: (nats: NatsConnection, config: OrchestratorConfig, plans: PlanStore, logger: Logger) =>
      new StoredPlanSource(nats, config.subjectPrefix, plans, {
        onWaiting: (message, runId) => logger.warn({ runId }, message),
        maxCachedPlans: config.maxCachedPlans,
      }),
    inject: [NATS, OrchestratorConfig, PlanStore, LOGGER],
  },
  {
    // One tick reads each presence key once: the watcher reuses what the runs' health checks read.
    provide: RedisPresence,
    useFactory: (redis: Redis, config: OrchestratorConfig, intake: PresenceIntake) =>
      new RedisPresence(redis, config.subjectPrefix, {
        maxAgeMs: config.tickMs / 2,
        ttlMs: config.presenceTtlSeconds * 1000,
        listeningFor: () => intake.listeningFor(),
      }),
    inject: [REDIS, OrchestratorConfig, PresenceIntake],
  },
  {
    // Answers from the start, so that a later incarnation of this replica never takes it for gone.
    provide: NatsIncarnationBeacon,
    useFactory: (nats: NatsConnection, config: OrchestratorConfig, holder: LeaseHolder) => {
      const beacon = new NatsIncarnationBeacon(nats, config.subjectPrefix, holder);
      beacon.start();
      return beacon;
    },
    inject: [NATS, OrchestratorConfig, LEASE_HOLDER],
  },
  {
    provide: RedisRunLease,
    useFactory: (
      redis: Redis,
      config: OrchestratorConfig,
      holder: LeaseHolder,
      beacon: NatsIncarnationBeacon,
      logger: Logger,
    ) =>
      new RedisRunLease(redis, config.subjectPrefix, holder, config.leaseMs, {
        probe: beacon,
        onTakenBack: (lease, previous) =>
          logger.info({ lease, previous }, "took back a lease from this replica's previous process (it is gone)"),
      }),
    inject: [REDIS, OrchestratorConfig, LEASE_HOLDER, NatsIncarnationBeacon, LOGGER],
  },
  {
    provide: PostgresRunEventLog,
    useFactory: (store: EventStore) => new PostgresRunEventLog(store),
    inject: [EventStore],
  },
  {
    provide: COORDINATOR_PORTS,
    useFactory: (
      log: PostgresRunEventLog,
      plans: StoredPlanSource,
      secrets: SecretOpener | null,
      dispatcher: JetStreamDispatcher,
      presence: RedisPresence,
      lease: RedisRunLease,
      logger: Logger,
      store: EventStore,
    ): CoordinatorPorts => ({
      log,
      locks: new PostgresNodeLockLog(store),
      plans: new SealedPlanCheck(plans, secrets ?? undefined),
      dispatcher,
      presence,
      lease,
      clock: { now: () => new Date() },
      logger: {
        info: (msg, fields) => logger.info(fields ?? {}, msg),
        warn: (msg, fields) => logger.warn(fields ?? {}, msg),
        error: (msg, fields) => logger.error(fields ?? {}, msg),
      },
    }),
    inject: [
      PostgresRunEventLog,
      StoredPlanSource,
      SECRET_OPENER,
      JetStreamDispatcher,
      RedisPresence,
      RedisRunLease,
      LOGGER,
      EventStore,
    ],
  },
  {
    provide: RunCoordinator,
    useFactory: (ports: CoordinatorPorts, config: OrchestratorConfig) =>
      new RunCoordinator(ports, { limits: { maxBusyNodes: config.maxBusyNodes } }),
    inject: [COORDINATOR_PORTS, OrchestratorConfig],
  },
  {
    provide: StrategyCoordinator,
    useFactory: (
      ports: CoordinatorPorts,
      runs: RunCoordinator,
      nats: NatsConnection,
      config: OrchestratorConfig,
      configStore: ConfigStoreClient,
    ) => {
      const strategies = new StrategyCoordinator(
        ports,
        new ConfigStoreStrategySource(configStore, new StoredInputs(nats, config.subjectPrefix)),
        runs,
      );
      runs.onRunEnded = (runId, outcome, request) => {
        if (request?.childOf) void strategies.childEnded(runId, outcome);
      };
      return strategies;
    },
    inject: [COORDINATOR_PORTS, RunCoordinator, NATS, OrchestratorConfig, ConfigStoreClient],
  },
];
