import { nodeStreamId, type NodeEvent } from '@granule/run-events';
import { RUN_NODE_STATUSES, type RunNodeStatus } from './node-status';

/** Statuses the event log gives a node in config-store: what runs say, and presence. */
export type ProjectedNodeStatus = RunNodeStatus | 'offline';

/**
 * What config-store should record for one node: a status to set, or `back_online` (its presence
 * returned: put back the status the last run gave it, if config-store still says `offline`).
 */
export type NodeStatusUpdate =
  { uid: string; kind: 'set'; status: ProjectedNodeStatus } | { uid: string; kind: 'back_online' };

const RUN_STATUSES = new Set<string>(RUN_NODE_STATUSES);

/** An event as read from the log: its stream tells whose it is. */
export interface LoggedEvent {
  streamId: string;
  type: string;
  data: unknown;
}

/**
 * The node status updates a commit-ordered batch of events calls for, one per node: its last
 * word wins (`ready` after `deploying` is `ready`; `offline` after `error` is `offline`). Only
 * node streams count (`node-<uid>`: NodeStatusChanged, NodeWentOffline, NodeCameOnline and
 * NodeRegistered, the last two both meaning the node is back); other
 * events and malformed payloads are ignored. Updates come in the order of each node's last event.
 */
export function nodeStatusUpdates(events: readonly LoggedEvent[]): NodeStatusUpdate[] {
  const byNode = new Map<string, NodeStatusUpdate>();
  for (const e of events) {
    const update = updateOf(e);
    if (!update) continue;
    byNode.delete(update.uid);
    byNode.set(update.uid, update);
  }
  return [...byNode.values()];
}

function updateOf(e: LoggedEvent): NodeStatusUpdate | undefined {
  if (!e.streamId.startsWith('node-')) return undefined;
  const data = e.data as Partial<NodeEvent['data']> & { to?: unknown };
  const uid = data?.uid;
  if (typeof uid !== 'string' || e.streamId !== nodeStreamId(uid)) return undefined;
  switch (e.type as NodeEvent['type']) {
    case 'NodeStatusChanged':
      return typeof data.to === 'string' && RUN_STATUSES.has(data.to)
        ? { uid, kind: 'set', status: data.to as RunNodeStatus }
        : undefined;
    case 'NodeWentOffline':
      return { uid, kind: 'set', status: 'offline' };
    // An agent (re)registering is its node coming back as much as its presence key returning.
    case 'NodeCameOnline':
    case 'NodeRegistered':
      return { uid, kind: 'back_online' };
    default:
      return undefined;
  }
}

/**
 * The status to give a node whose presence came back: the last status a run gave it (from its
 * node stream, oldest first), or `discover` when no run touched it.
 */
export function statusAfterOnline(nodeStream: readonly LoggedEvent[]): 'discover' | RunNodeStatus {
  for (let i = nodeStream.length - 1; i >= 0; i--) {
    const u = updateOf(nodeStream[i]);
    if (u?.kind === 'set' && u.status !== 'offline') return u.status;
  }
  return 'discover';
}
