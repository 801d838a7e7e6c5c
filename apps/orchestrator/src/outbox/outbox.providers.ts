import type { Provider } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { ConfigStoreClient } from '@granule/config-store-client';
import { EventStore, NatsOutboxPublisher } from '@granule/event-store';
import { RepeatedFailureLog } from '@granule/observability';
import type { Logger } from '@granule/service-kit';
import { OrchestratorConfig } from '../orchestrator.config';
import { LOGGER, NATS } from '../orchestrator.tokens';
import { RedisPresence } from '../runs/adapters/redis-presence.adapter';
import { NodePresenceWatcher } from './node-presence.watcher';
import { NodeStatusProjector } from './node-status.projector';
import { OutboxKeeper } from './outbox-keeper';

/**
 * What the holder of the outbox lease runs, as Nest providers: the outbox publisher, the node
 * and environment status projection, the presence watcher, and `OutboxKeeper`, which starts
 * and stops them with the lease.
 */
export const outboxProviders: Provider[] = [
  {
    provide: NatsOutboxPublisher,
    useFactory: (nats: NatsConnection, config: OrchestratorConfig, store: EventStore, logger: Logger) => {
      const failures = new RepeatedFailureLog(logger, {
        failing: 'outbox publishing failed; retrying',
        recovered: 'outbox publishing works again',
      });
      return new NatsOutboxPublisher(nats, store, {
        subjectPrefix: `${config.subjectPrefix}.events`,
        // Watchers see this orchestrator's events within 25 ms, other replicas' within a poll.
        pollIntervalMs: 100,
        minIntervalMs: 25,
        onError: (err: unknown) => failures.failed(err),
        onRecovered: () => failures.succeeded(),
      });
    },
    inject: [NATS, OrchestratorConfig, EventStore, LOGGER],
  },
  {
    provide: NodeStatusProjector,
    useFactory: (store: EventStore, configStore: ConfigStoreClient, logger: Logger) =>
      new NodeStatusProjector(store, configStore, logger),
    inject: [EventStore, ConfigStoreClient, LOGGER],
  },
  {
    provide: NodePresenceWatcher,
    useFactory: (presence: RedisPresence, store: EventStore) => new NodePresenceWatcher(presence, store),
    inject: [RedisPresence, EventStore],
  },
  OutboxKeeper,
];
