import { Inject, Injectable } from '@nestjs/common';
import type { OnApplicationShutdown } from '@nestjs/common';
import { NatsOutboxPublisher } from '@granule/event-store';
import type { Logger } from '@granule/service-kit';
import { OrchestratorConfig } from '../orchestrator.config';
import { LOGGER } from '../orchestrator.tokens';
import { RedisRunLease } from '../runs/adapters/run-lease.adapter';
import { NodePresenceWatcher } from './node-presence.watcher';
import { NodeStatusProjector } from './node-status.projector';

/** The lease name of the outbox: one orchestrator at a time publishes and projects. */
const OUTBOX_LEASE = 'outbox';

/**
 * What one orchestrator at a time does, whoever holds the outbox lease: publishes committed
 * events on `<prefix>.events.<type>.<stream>` (the outbox), keeps config-store's node and
 * environment statuses in step with the log (unless `nodeStatusSync` is off), and records agents
 * going offline and coming back. It starts and stops those providers as the lease comes and goes.
 */
@Injectable()
export class OutboxKeeper implements OnApplicationShutdown {
  private publishing = false;

  constructor(
    @Inject(OrchestratorConfig) private readonly config: OrchestratorConfig,
    @Inject(RedisRunLease) private readonly lease: RedisRunLease,
    @Inject(NatsOutboxPublisher) private readonly outbox: NatsOutboxPublisher,
    @Inject(NodeStatusProjector) private readonly projector: NodeStatusProjector,
    @Inject(NodePresenceWatcher) private readonly presence: NodePresenceWatcher,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Takes or keeps the outbox lease, starting or stopping what goes with it; then records presence changes. */
  async tick(): Promise<void> {
    const holding = this.publishing ? await this.lease.renew(OUTBOX_LEASE) : await this.lease.acquire(OUTBOX_LEASE);
    if (holding && !this.publishing) {
      this.outbox.start();
      if (this.config.nodeStatusSync) this.projector.start();
      this.presence.forget();
      this.publishing = true;
    } else if (!holding && this.publishing) {
      await this.stopPublishing();
    }
    if (this.publishing) for (const e of await this.presence.check()) this.logger.info({ node: e.data.uid }, e.type);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.stopPublishing();
    await this.lease.release(OUTBOX_LEASE);
  }

  private async stopPublishing(): Promise<void> {
    this.publishing = false;
    await this.outbox.stop();
    await this.projector.stop();
  }
}
