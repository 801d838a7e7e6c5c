import { nodeStreamId } from '@granule/contracts';
import type { NodeEvent } from '@granule/contracts';
import type { EventStore } from '@granule/event-store';
import type { RedisPresence } from '../runs/adapters/redis-presence.adapter';

/** Node streams written per transaction when many nodes change at once. */
const WRITE_BATCH = 500;

/**
 * Records agents going offline and coming back as events of their node streams: a node whose
 * presence key lapsed gets `NodeWentOffline`, one whose key is back gets `NodeCameOnline`. Only
 * one orchestrator runs it at a time (the outbox lease holder), so each change is written once.
 *
 * Built for fleets of 10,000 nodes checked every tick: the node list is one read of the streams
 * table, a node's last known state is read from its stream only on first sight, the
 * presence keys are read with MGET (a node the runs' health checks found online in the same tick
 * is not asked again), and a mass change (a rack going dark) is written in a few
 * transactions rather than one per node.
 */
export class NodePresenceWatcher {
  private readonly online = new Map<string, boolean>();

  constructor(
    private readonly presence: Pick<RedisPresence, 'present' | 'absenceKnown'>,
    private readonly store: Pick<EventStore, 'appendBatch' | 'streamIdsOfType' | 'streamHeads'>,
  ) {}

  /** Checks every node that ever registered (node streams) against its presence key. */
  async check(now = new Date()): Promise<NodeEvent[]> {
    const streams = await this.store.streamIdsOfType('node');
    if (streams.length === 0) return [];
    const uids = streams.map((id) => id.slice('node-'.length));
    await this.learn(uids.filter((uid) => !this.online.has(uid)));
    const present = await this.presence.present(uids);
    // Right after a Redis restart a missing key may be a lost one: only returns are recorded.
    const absenceKnown = present.size === uids.length || (await this.presence.absenceKnown());
    const at = now.toISOString();
    const changes: NodeEvent[] = [];
    for (const uid of uids) {
      const isUp = present.has(uid);
      if (isUp === this.online.get(uid) || (!isUp && !absenceKnown)) continue;
      changes.push(
        isUp ? { type: 'NodeCameOnline', data: { uid, at } } : { type: 'NodeWentOffline', data: { uid, at } },
      );
    }
    const written: NodeEvent[] = [];
    for (let k = 0; k < changes.length; k += WRITE_BATCH) {
      const batch = changes.slice(k, k + WRITE_BATCH);
      await this.store.appendBatch(
        batch.map((e) => ({ streamId: nodeStreamId(e.data.uid), events: [e], expectedVersion: 'any' as const })),
      );
      // Remembered only once written: a failed write is tried again on the next tick.
      for (const e of batch) this.online.set(e.data.uid, e.type === 'NodeCameOnline');
      written.push(...batch);
    }
    return written;
  }

  /**
   * Drops what this watcher remembers, so the next check starts from the node streams: call it
   * when this orchestrator becomes the one that watches (another may have written meanwhile).
   */
  forget(): void {
    this.online.clear();
  }

  /** A registration is a node coming (back) online. */
  registered(uid: string): void {
    this.online.set(uid, true);
  }

  /** Reads the last known state of nodes seen for the first time from their streams. */
  private async learn(uids: string[]): Promise<void> {
    if (uids.length === 0) return;
    for (const head of await this.store.streamHeads(uids.map(nodeStreamId)))
      this.online.set(head.streamId.slice('node-'.length), head.lastEventType !== 'NodeWentOffline');
  }
}
