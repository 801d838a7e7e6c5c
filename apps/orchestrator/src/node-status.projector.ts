import { nodeStreamId } from '@granule/contracts';
import { isConfigError, type ConfigStoreClient } from '@granule/config-store-client';
import type { EventStore, Subscription } from '@granule/event-store';
import { nodeStatusUpdates, statusAfterOnline, type LoggedEvent, type NodeStatusUpdate } from '@granule/execution';
import type { Logger } from '@granule/service-kit';

/** Checkpoint name of the projection in `granule_checkpoints`. */
export const NODE_STATUS_CONSUMER = 'granule-node-status';
const POLL_MS = 1000;

/**
 * Keeps config-store's node `status` in step with the event log: what runs say of nodes
 * (NodeStatusChanged: deploying, ready, error, stopped) and presence (NodeWentOffline sets
 * `offline`; NodeCameOnline or a new NodeRegistered puts back what the last run said, or
 * `discover`, on a node config-store still calls offline). A checkpointed
 * subscription: a batch whose updates config-store does not take (it is down, say) is tried
 * again, so nothing is lost while it restarts. Nodes config-store does not know (deployed from a
 * plan file) are left alone. One orchestrator runs it at a time: the one holding the outbox lease.
 */
export class NodeStatusProjector {
  private subscription?: Subscription;
  private failing = false;

  constructor(
    private readonly store: Pick<EventStore, 'subscribe' | 'readStream'>,
    private readonly configStore: Pick<ConfigStoreClient, 'request'>,
    private readonly logger: Logger,
  ) {}

  start(): void {
    if (this.subscription) return;
    this.subscription = this.store.subscribe(NODE_STATUS_CONSUMER, (events) => this.applyAll(events), {
      pollIntervalMs: POLL_MS,
      onError: (err) => {
        if (!this.failing) this.logger.warn({ err: (err as Error).message }, 'cannot bring config-store node statuses up to date; retrying every second');
        this.failing = true;
      },
    });
  }

  async stop(): Promise<void> {
    await this.subscription?.stop();
    this.subscription = undefined;
  }

  /** Applies one commit-ordered batch; a throw leaves the checkpoint where it was. */
  private async applyAll(events: readonly LoggedEvent[]): Promise<void> {
    for (const update of nodeStatusUpdates(events)) await this.apply(update);
    if (this.failing) this.logger.info({}, 'config-store node statuses are up to date again');
    this.failing = false;
  }

  private async apply(update: NodeStatusUpdate): Promise<void> {
    try {
      if (update.kind === 'set') {
        await this.configStore.request('node.update', { uid: update.uid, status: update.status });
        return;
      }
      // Back online: only a node still marked offline gets the status its last run gave it.
      const node = await this.configStore.request('node.get', { uid: update.uid });
      if (node.status !== 'offline') return;
      const status = statusAfterOnline(await this.store.readStream(nodeStreamId(update.uid)));
      await this.configStore.request('node.update', { uid: update.uid, status });
    } catch (err) {
      if (isConfigError(err, 'CONFIG_NOT_FOUND')) return; // not a config-store node
      throw err;
    }
  }
}
