import { lockStreamId } from '@granule/run-events';
import type { NodeLockEvent } from '@granule/run-events';
import type { EventStore } from '@granule/event-store';
import type { NodeLockLog, NodeLockView } from '@granule/run-coordination';

/** Who holds which node: the last event of each node's lock stream `lock-<uid>` (ADR 0024). */
export class PostgresNodeLockLog implements NodeLockLog {
  constructor(private readonly store: EventStore) {}

  async read(uids: readonly string[]): Promise<NodeLockView> {
    const view: NodeLockView = { holders: new Map(), versions: new Map() };
    const last = await this.store.lastEvents<NodeLockEvent>(uids.map(lockStreamId));
    for (const e of last) {
      const uid = e.data.uid;
      view.versions.set(uid, e.streamVersion);
      if (e.type === 'NodeLocked') view.holders.set(uid, e.data.runId);
    }
    return view;
  }
}
