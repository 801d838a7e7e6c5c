import type { Provider } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { EventStore } from '@granule/event-store';
import type { GranuleMetrics, OrchestratorMetrics } from '@granule/observability';
import type { Logger } from '@granule/service-kit';
import { OrchestratorConfig } from '../orchestrator.config';
import { GRANULE_METRICS, LOGGER, METRICS, NATS } from '../orchestrator.tokens';
import { RunMetricsFeed } from './run-metrics';

/**
 * The run metrics feed on the module's one event store; it listens from the start (core NATS
 * subscriptions, which end when the connection drains).
 */
export const runMetricsFeedProvider: Provider = {
  provide: RunMetricsFeed,
  useFactory: (
    metrics: GranuleMetrics,
    nats: NatsConnection,
    store: EventStore,
    logger: Logger,
    config: OrchestratorConfig,
    counters: OrchestratorMetrics,
  ) => {
    const feed = new RunMetricsFeed(metrics, { nats, store, logger, subjectPrefix: config.subjectPrefix }, counters);
    feed.start();
    return feed;
  },
  inject: [GRANULE_METRICS, NATS, EventStore, LOGGER, OrchestratorConfig, METRICS],
};
