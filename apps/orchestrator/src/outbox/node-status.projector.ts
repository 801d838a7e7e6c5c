import { nodeStreamId, type DeploymentRequested } from '@granule/contracts';
import { isConfigError, type ConfigStoreClient } from '@granule/config-store-client';
import type { EventStore, Subscription } from '@granule/event-store';
import {
  environmentStatusAfter,
  nodeStatusUpdates,
  runSpeaksForEnvironment,
  statusAfterOnline,
  type LoggedEvent,
  type NodeStatusUpdate,
  type ProjectedEnvironmentStatus,
} from '@granule/deployment-run';
import type { Logger } from '@granule/service-kit';

/** Checkpoint name of the projection in `granule_checkpoints`. */
export const NODE_STATUS_CONSUMER = 'granule-node-status';
const POLL_MS = 1000;
/** Runs whose request is kept in memory (read once from their first event). */
const REQUEST_CACHE_SIZE = 1000;

/**
 * Keeps config-store's node `status` in step with the event log: what runs say of nodes
 * (NodeStatusChanged: deploying, ready, error, stopped) and presence (NodeWentOffline sets
 * `offline`; NodeCameOnline or a new NodeRegistered puts back what the last run said, or
 * `discover`, on a node config-store still calls offline). A checkpointed
 * subscription: a batch whose updates config-store does not take (it is down, say) is tried
 * again, so nothing is lost while it restarts. Nodes config-store does not know (deployed from a
 * plan file) are left alone. One orchestrator runs it at a time: the one holding the outbox lease.
 *
 * Environments get their status the same way, from the runs that speak for them
 * (`runSpeaksForEnvironment`: a real deployment of an environment's default graph):
 * `deployment` when one starts or resumes, then `operational`, `partially_deployed`, `error` or
 * `stopped` as it ends (Fuel's cluster statuses, which task conditions read).
 */
export class NodeStatusProjector {
  private subscription?: Subscription;
  private failing = false;
  /** A run's request (its first event), or null when it speaks for no environment. */
  private readonly requests = new Map<string, DeploymentRequested['data'] | null>();

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
        if (!this.failing)
          this.logger.warn(
            { err: (err as Error).message },
            'cannot bring config-store node and environment statuses up to date; retrying every second',
          );
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
    for (const [envId, status] of await this.environmentUpdates(events)) await this.applyEnvironment(envId, status);
    if (this.failing) this.logger.info({}, 'config-store node and environment statuses are up to date again');
    this.failing = false;
  }

  /** The last environment status each environment's runs call for in this batch. */
  private async environmentUpdates(events: readonly LoggedEvent[]): Promise<Map<string, ProjectedEnvironmentStatus>> {
    const updates = new Map<string, ProjectedEnvironmentStatus>();
    for (const e of events) {
      if (!e.streamId.startsWith('run-')) continue;
      const status = environmentStatusAfter(e);
      if (!status) continue;
      const request = await this.requestOf(e.streamId);
      if (!request?.envId) continue;
      updates.delete(request.envId);
      updates.set(request.envId, status);
    }
    return updates;
  }

  private async requestOf(streamId: string): Promise<DeploymentRequested['data'] | null> {
    const known = this.requests.get(streamId);
    if (known !== undefined) return known;
    const [first] = await this.store.readStream(streamId, { maxCount: 1 });
    const request =
      first?.type === 'DeploymentRequested' && runSpeaksForEnvironment(first.data as DeploymentRequested['data'])
        ? (first.data as DeploymentRequested['data'])
        : null;
    if (this.requests.size >= REQUEST_CACHE_SIZE) this.requests.delete(this.requests.keys().next().value as string);
    this.requests.set(streamId, request);
    return request;
  }

  private async applyEnvironment(envId: string, status: ProjectedEnvironmentStatus): Promise<void> {
    try {
      await this.configStore.request('env.update', { id: envId, status });
    } catch (err) {
      if (isConfigError(err, 'CONFIG_NOT_FOUND')) return; // deleted since
      throw err;
    }
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
