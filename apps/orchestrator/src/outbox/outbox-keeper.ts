import { Inject, Injectable } from '@nestjs/common';
import type { OnApplicationShutdown } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { ConfigStoreClient } from '@granule/config-store-client';
import { EventStore, NatsOutboxPublisher } from '@granule/event-store';
import { RepeatedFailureLog } from '@granule/observability';
import type { Logger } from '@granule/service-kit';
import { OrchestratorConfig } from '../orchestrator.config';
import { LOGGER, NATS } from '../orchestrator.tokens';
import { RedisPresence } from '../runs/adapters/redis-presence.adapter';
import { RedisRunLease } from '../runs/adapters/run-lease.adapter';
import { NodePresenceWatcher } from './node-presence.watcher';
import { NodeStatusProjector } from './node-status.projector';

/** The lease name of the outbox: one orchestrator at a time publishes and projects. */
const OUTBOX_LEASE = 'outbox';

/**
 * What one orchestrator at a time does, whoever holds the outbox lease: publishes committed
 * events on `<prefix>.events.<type>.<stream>` (the outbox), keeps config-store's node and
 * environment statuses in step with the log, and records agents going offline and coming back.
 */
@Injectable()
export class OutboxKeeper implements OnApplicationShutdown {
  private outbox?: NatsOutboxPublisher;
  private readonly projector?: NodeStatusProjector;
  readonly presence: NodePresenceWatcher;
  private readonly failures: RepeatedFailureLog;

  constructor(
    @Inject(NATS) private readonly nats: NatsConnection,
    @Inject(OrchestratorConfig) private readonly config: OrchestratorConfig,
    @Inject(EventStore) private readonly store: EventStore,
    @Inject(RedisRunLease) private readonly lease: RedisRunLease,
    @Inject(RedisPresence) presence: RedisPresence,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.presence = new NodePresenceWatcher(presence, store);
    if (config.nodeStatusSync)
      this.projector = new NodeStatusProjector(
        store,
        new ConfigStoreClient(nats, { prefix: config.subjectPrefix }),
        logger,
      );
    this.failures = new RepeatedFailureLog(logger, {
      failing: 'outbox publishing failed; retrying',
      recovered: 'outbox publishing works again',
    });
  }

  /** Takes or keeps the outbox lease, starting or stopping what goes with it; then records presence changes. */
  async tick(): Promise<void> {
    const holding = this.outbox ? await this.lease.renew(OUTBOX_LEASE) : await this.lease.acquire(OUTBOX_LEASE);
    if (holding && !this.outbox) {
      this.outbox = new NatsOutboxPublisher(this.nats, this.store, {
        subjectPrefix: `${this.config.subjectPrefix}.events`,
        // Watchers see this orchestrator's events within 25 ms, other replicas' within a poll.
        pollIntervalMs: 100,
        minIntervalMs: 25,
        onError: (err: unknown) => this.failures.failed(err),
        onRecovered: () => this.failures.succeeded(),
      });
      this.outbox.start();
      this.projector?.start();
      this.presence.forget();
    } else if (!holding && this.outbox) {
      await this.stopPublishing();
    }
    if (this.outbox) for (const e of await this.presence.check()) this.logger.info({ node: e.data.uid }, e.type);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.stopPublishing();
    await this.lease.release(OUTBOX_LEASE);
  }

  private async stopPublishing(): Promise<void> {
    await this.outbox?.stop();
    this.outbox = undefined;
    await this.projector?.stop();
  }
}
