import type { Redis } from 'ioredis';
import type { DataSource } from 'typeorm';
import { nodeStreamId, redisKeys } from '@granule/contracts';
import type { NodeEvent } from '@granule/contracts';
import type { EventStore } from '@granule/event-store';

/**
 * Records agents going offline and coming back as events of their node streams: a node whose
 * presence key lapsed gets `NodeWentOffline`, one whose key is back gets `NodeCameOnline`. Only
 * one orchestrator runs it at a time (the outbox lease holder), so each change is written once;
 * the last known state is read back from the node's stream on first sight.
 */
export class NodePresenceWatcher {
  private readonly online = new Map<string, boolean>();

  constructor(
    private readonly redis: Redis,
    private readonly store: EventStore,
    private readonly dataSource: DataSource,
    private readonly prefix: string,
  ) {}

  /** Checks every node that ever registered (node streams) against its presence key. */
  async check(now = new Date()): Promise<NodeEvent[]> {
    const rows: { stream_id: string; type: string }[] = await this.dataSource.query(
      `SELECT s.stream_id, e.type FROM granule_streams s
         JOIN granule_events e ON e.stream_id = s.stream_id AND e.stream_version = s.version
        WHERE s.stream_type = 'node'`,
    );
    if (rows.length === 0) return [];
    const keys = redisKeys(this.prefix);
    const uids = rows.map((r) => r.stream_id.slice('node-'.length));
    const present = await this.redis.pipeline(uids.map((uid) => ['exists', keys.presence(uid)])).exec();
    const written: NodeEvent[] = [];
    for (const [k, uid] of uids.entries()) {
      const isUp = present?.[k]?.[1] === 1;
      const wasUp = this.online.get(uid) ?? rows[k].type !== 'NodeWentOffline';
      this.online.set(uid, isUp);
      if (isUp === wasUp) continue;
      const event: NodeEvent = isUp ? { type: 'NodeCameOnline', data: { uid, at: now.toISOString() } } : { type: 'NodeWentOffline', data: { uid, at: now.toISOString() } };
      await this.store.appendToStream(nodeStreamId(uid), [event], { expectedVersion: 'any' });
      written.push(event);
    }
    return written;
  }

  /** A registration is a node coming (back) online. */
  registered(uid: string): void {
    this.online.set(uid, true);
  }
}
