import type { InstanceCounts, RunEvent, RunSummary } from '@granule/run-events';
import { STATUS_NAMES } from './run-state';
import type { RunState } from './run-state';

const emptyCounts = (): InstanceCounts => ({
  pending: 0,
  dispatched: 0,
  running: 0,
  succeeded: 0,
  failed: 0,
  skipped: 0,
  dep_failed: 0,
  timed_out: 0,
  not_in_run: 0,
});

/**
 * The recap of a run: task instances on real nodes counted by status, overall and per node,
 * the failures with their output, and what runs now. `events` gives failure details.
 */
export function summarizeRun(state: RunState, events: RunEvent[]): RunSummary {
  const totals = emptyCounts();
  const nodes: RunSummary['nodes'] = {};
  const running: string[] = [];
  const plan = state.plan;
  if (plan) {
    plan.nodeNames.forEach((uid, n) => {
      nodes[uid] = { ...emptyCounts(), failedNode: state.failedNodes.has(n) };
    });
    for (let i = 0; i < plan.size; i++) {
      if (plan.node[i] < 0 || (plan.noWork[i] && !plan.planSkipped[i])) continue;
      const status = STATUS_NAMES[state.status[i]];
      totals[status]++;
      nodes[plan.nodeNames[plan.node[i]]][status]++;
      if (status === 'dispatched' || status === 'running') running.push(plan.keys[i]);
    }
  }
  const last = new Map<string, Extract<RunEvent, { type: 'TaskFailed' | 'TaskTimedOut' }>>();
  for (const e of events) if (e.type === 'TaskFailed' || e.type === 'TaskTimedOut') last.set(e.data.key, e);
  const failures: RunSummary['failures'] = [];
  for (const [key, e] of last) {
    const i = plan?.index.get(key);
    if (i === undefined || !plan) continue;
    const status = STATUS_NAMES[state.status[i]];
    if (status !== 'failed' && status !== 'timed_out') continue;
    failures.push({
      key,
      status,
      ...(e.type === 'TaskFailed' && e.data.error ? { error: e.data.error } : {}),
      ...(e.data.outputTail ? { outputTail: e.data.outputTail } : {}),
    });
  }
  return {
    runId: state.runId,
    phase: state.phase,
    version: state.version,
    ...(state.planId ? { planId: state.planId } : {}),
    ...(state.request?.requestedBy ? { requestedBy: state.request.requestedBy } : {}),
    ...(state.terminalReason
      ? { reason: state.terminalReason }
      : state.stopReason
        ? { reason: state.stopReason.detail }
        : {}),
    totals,
    nodes,
    failures,
    running,
  };
}
