import type { InstanceCounts, RunEvent, RunSummary, TaskInstanceRow } from '@granule/run-events';
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
  const retried = new Set<string>();
  let failedTries = 0;
  for (const e of events) {
    if (e.type !== 'TaskAttemptFailed') continue;
    failedTries++;
    retried.add(e.data.key);
  }
  return {
    runId: state.runId,
    phase: state.phase,
    version: state.version,
    ...(state.planId ? { planId: state.planId } : {}),
    ...(state.request?.requestedBy ? { requestedBy: state.request.requestedBy } : {}),
    ...(state.request?.check ? { check: true } : {}),
    ...(state.request?.dryRun ? { dryRun: true } : {}),
    ...(state.request?.noop ? { noop: true } : {}),
    ...(state.terminalReason
      ? { reason: state.terminalReason }
      : state.stopReason
        ? {
            reason: state.stopReason.requestedBy
              ? `${state.stopReason.detail} (${state.stopReason.requestedBy})`
              : state.stopReason.detail,
          }
        : {}),
    totals,
    nodes,
    failures,
    running,
    failedTries,
    retriedTasks: retried.size,
  };
}

/**
 * Every task instance of a run on a real node with its status, tries, exit code, start and
 * duration (`runs tasks`), in plan order; `filter` keeps one node or status.
 */
export function taskInstances(
  state: RunState,
  events: RunEvent[],
  filter: { node?: string; status?: string } = {},
): TaskInstanceRow[] {
  const plan = state.plan;
  if (!plan) return [];
  const facts = new Map<string, Partial<TaskInstanceRow> & { failedTries: number }>();
  const of = (key: string) => {
    let f = facts.get(key);
    if (!f) facts.set(key, (f = { failedTries: 0 }));
    return f;
  };
  for (const e of events) {
    switch (e.type) {
      case 'TaskStarted':
        of(e.data.key).startedAt = e.data.at;
        break;
      case 'TaskAttemptFailed': {
        const f = of(e.data.key);
        f.failedTries = Math.max(f.failedTries, e.data.try);
        f.exitCode = e.data.exitCode;
        f.error = `try ${e.data.try} of ${e.data.of}: ${e.data.reason}`;
        break;
      }
      case 'TaskSucceeded':
      case 'TaskFailed':
      case 'TaskTimedOut': {
        const f = of(e.data.key);
        f.tries = e.data.tries ?? f.failedTries + 1;
        f.exitCode = 'exitCode' in e.data ? e.data.exitCode : null;
        if (e.data.durationMs !== undefined) f.durationMs = e.data.durationMs;
        if (e.type === 'TaskFailed' && e.data.error) f.error = e.data.error;
        else if (e.type === 'TaskTimedOut') f.error = 'timed out';
        else delete f.error;
        break;
      }
    }
  }
  const rows: TaskInstanceRow[] = [];
  for (let i = 0; i < plan.size; i++) {
    if (plan.node[i] < 0 || plan.noWork[i]) continue;
    const node = plan.nodeNames[plan.node[i]];
    const status = STATUS_NAMES[state.status[i]];
    if (filter.node !== undefined && node !== filter.node) continue;
    if (filter.status !== undefined && status !== filter.status) continue;
    const f = facts.get(plan.keys[i]);
    const started = f?.startedAt !== undefined;
    rows.push({
      key: plan.keys[i],
      task: plan.task[i],
      node,
      status,
      tries: f?.tries ?? (f ? f.failedTries + (started && status === 'running' ? 1 : 0) : 0),
      exitCode: f?.exitCode ?? null,
      ...(f?.startedAt ? { startedAt: f.startedAt } : {}),
      ...(f?.durationMs !== undefined ? { durationMs: f.durationMs } : {}),
      ...(f?.error ? { error: f.error } : {}),
    });
  }
  return rows;
}
