import { isTerminalRunPhase } from '@granule/run-events';
import type { NodeStatusChanged, RunEvent } from '@granule/run-events';
import type { ExecutablePlan } from './executable-plan';
import { S, type RunState } from './run-state';

/** What a run makes of a node (the operator's `node list` vocabulary). */
export const RUN_NODE_STATUSES = ['deploying', 'ready', 'error', 'stopped'] as const;
export type RunNodeStatus = (typeof RUN_NODE_STATUSES)[number];

/**
 * Where node `n` stands in the run: `error` once it failed; `ready` when every task instance of
 * it with work ran (succeeded or skipped); `deploying` while some of its work was sent and the
 * rest is still to come; `stopped` when the run ended before its work was done. Undefined while
 * nothing of it was sent (the run has not touched the node).
 */
export function runNodeStatus(state: RunState, plan: ExecutablePlan, n: number): RunNodeStatus | undefined {
  if (state.failedNodes.has(n)) return 'error';
  const ended = isTerminalRunPhase(state.phase);
  let touched = false;
  let done = true;
  // Backwards: a node's later instances are the ones still pending, so a node in the middle of
  // its work is usually told apart after a step or two.
  const instances = plan.instancesOfNode[n];
  for (let k = instances.length - 1; k >= 0; k--) {
    const i = instances[k];
    if (plan.noWork[i]) continue;
    const s = state.status[i];
    if (s === S.NotInRun) continue;
    if (s !== S.Pending) touched = true;
    if (s !== S.Succeeded && s !== S.Skipped) done = false;
    if (touched && !done && !ended) return 'deploying';
  }
  if (!touched) return undefined;
  if (done) return 'ready';
  return ended ? 'stopped' : 'deploying';
}

/**
 * The nodes whose status `events` may have changed. A node the run already calls `deploying`
 * changes only when one of its tasks ends, it fails, or the run ends.
 */
function touchedNodes(
  plan: ExecutablePlan,
  events: readonly RunEvent[],
  known: Map<number, RunNodeStatus>,
): Iterable<number> {
  const nodes = new Set<number>();
  for (const e of events) {
    if (e.type === 'DeploymentSucceeded' || e.type === 'DeploymentFailed' || e.type === 'DeploymentStopped') {
      for (let n = 0; n < plan.nodeNames.length; n++) nodes.add(n);
      return nodes;
    }
    const data = e.data as { key?: unknown; node?: unknown };
    if (typeof data.key === 'string') {
      const i = plan.index.get(data.key);
      const ends = e.type !== 'TaskDispatched' && e.type !== 'TaskStarted';
      if (i !== undefined && plan.node[i] >= 0 && (ends || known.get(plan.node[i]) !== 'deploying'))
        nodes.add(plan.node[i]);
    } else if (e.type === 'NodeFailed') {
      const n = plan.nodeIndex.get(e.data.node);
      if (n !== undefined) nodes.add(n);
    }
  }
  return nodes;
}

/**
 * The NodeStatusChanged events that `events` (already folded into `state`) cause, given what
 * the run said of each node before (`known`, updated in place). `from` is the status this run
 * gave the node before, absent on the run's first word about it.
 */
export function nodeStatusChanges(
  state: RunState,
  plan: ExecutablePlan,
  events: readonly RunEvent[],
  known: Map<number, RunNodeStatus>,
  at: string,
): NodeStatusChanged[] {
  const changes: NodeStatusChanged[] = [];
  for (const n of touchedNodes(plan, events, known)) {
    const to = runNodeStatus(state, plan, n);
    const from = known.get(n);
    if (to === undefined || to === from) continue;
    known.set(n, to);
    changes.push({
      type: 'NodeStatusChanged',
      data: { uid: plan.nodeNames[n], ...(from ? { from } : {}), to, runId: state.runId, at },
    });
  }
  return changes;
}

/** What the run has said of each node so far, rebuilt from its state (recovery). */
export function knownNodeStatuses(state: RunState, plan: ExecutablePlan): Map<number, RunNodeStatus> {
  const known = new Map<number, RunNodeStatus>();
  for (let n = 0; n < plan.nodeNames.length; n++) {
    const s = runNodeStatus(state, plan, n);
    if (s) known.set(n, s);
  }
  return known;
}
