import type { NodeHeld, NodeLockEvent, RunEvent } from '@granule/run-events';
import type { ExecutablePlan } from './executable-plan';
import type { RunState } from './run-state';

/**
 * Node locks (ADR 0024). A run that does work on a node holds the node from its `PlanAccepted`
 * (or `DeploymentResumed`) until it ends, stops or fails; another run that needs the node is
 * refused (`NODES_LOCKED`) or, asked with `--wait`, queued (`DeploymentQueued`). Each node has a
 * lock stream `lock-<uid>` whose last event says who holds it (`NodeLocked`) or that nobody does
 * (`NodeReleased`); the lock events are appended with the run events that cause them.
 */

/** Who holds each node: the run of a lock stream's last `NodeLocked` (a released node is absent). */
export type NodeHolders = ReadonlyMap<string, string>;

/** The nodes a run does work on: the plan's nodes with an instance that runs something (only `only` for a retry). */
export function nodesToLock(plan: ExecutablePlan, only?: readonly string[]): string[] {
  const wanted = new Set<number>();
  if (only) {
    for (const key of only) {
      const i = plan.index.get(key);
      if (i !== undefined && !plan.noWork[i] && plan.node[i] >= 0) wanted.add(plan.node[i]);
    }
  } else {
    for (let i = 0; i < plan.size; i++) if (!plan.noWork[i] && plan.node[i] >= 0) wanted.add(plan.node[i]);
  }
  return [...wanted].map((n) => plan.nodeNames[n]).sort();
}

/** The nodes of `nodes` that a run other than `runId` holds, by node name. */
export function lockConflicts(runId: string, nodes: readonly string[], holders: NodeHolders): NodeHeld[] {
  const conflicts: NodeHeld[] = [];
  for (const node of nodes) {
    const holder = holders.get(node);
    if (holder !== undefined && holder !== runId) conflicts.push({ node, runId: holder });
  }
  return conflicts.sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
}

/** True when two lists of holders say the same (a queued run records the holders again only when they change). */
export function sameHolders(a: readonly NodeHeld[] | undefined, b: readonly NodeHeld[]): boolean {
  if (!a || a.length !== b.length) return false;
  return a.every((h, k) => h.node === b[k].node && h.runId === b[k].runId);
}

/** `node-1, node-2 (run A); node-3 (run B)`, at most 10 nodes per run named. */
export function describeHolders(conflicts: readonly NodeHeld[]): string {
  const byRun = new Map<string, string[]>();
  for (const { node, runId } of conflicts) byRun.set(runId, [...(byRun.get(runId) ?? []), node]);
  return [...byRun]
    .map(([runId, nodes]) => {
      const named = nodes.slice(0, 10).join(', ') + (nodes.length > 10 ? ` and ${nodes.length - 10} more` : '');
      return `${named} (run ${runId})`;
    })
    .join('; ');
}

/** What a refused run or resume says: who holds which node, how to wait, how to stop the holder. */
export function nodesLockedReason(conflicts: readonly NodeHeld[], action: 'deploy' | 'retry' | 'resume'): string {
  const runs = [...new Set(conflicts.map((c) => c.runId))];
  const stop = runs.map((r) => `granule stop ${r}`).join(', ');
  const wait = action === 'deploy' ? 'granule deploy --wait ...' : `granule ${action} --wait ...`;
  return (
    `nodes held by a running deployment: ${describeHolders(conflicts)}; ` +
    `wait for it with '${wait}' (queued, starts when the nodes are free), or stop it with '${stop}'`
  );
}

/** True when the run holds the locks of its nodes in this state (planned, not a dry run, going). */
export function holdsNodeLocks(state: RunState): boolean {
  return (
    state.plan !== undefined && !state.request?.dryRun && (state.phase === 'running' || state.phase === 'stopping')
  );
}

/**
 * The lock events that `events` (folded into `state` already) cause: `NodeLocked` for each of the
 * run's nodes when it starts (`PlanAccepted`, not a dry run) or resumes, `NodeReleased` when it
 * ends while it held them. `held`: whether the run held its locks before `events`; the answer
 * says whether it holds them after.
 */
export function nodeLockChanges(
  state: RunState,
  events: readonly RunEvent[],
  held: boolean,
  at: string,
): { events: NodeLockEvent[]; held: boolean } {
  const nodes = state.lockedNodes ?? [];
  const out: NodeLockEvent[] = [];
  const all = (type: NodeLockEvent['type']): void => {
    for (const uid of nodes) out.push({ type, data: { uid, runId: state.runId, at } });
  };
  for (const e of events) {
    switch (e.type) {
      case 'PlanAccepted':
      case 'DeploymentResumed':
        if (!held && !state.request?.dryRun) {
          all('NodeLocked');
          held = true;
        }
        break;
      case 'DeploymentSucceeded':
      case 'DeploymentFailed':
      case 'DeploymentStopped':
        if (held) {
          all('NodeReleased');
          held = false;
        }
        break;
    }
  }
  return { events: out, held };
}
