import type { RunEventEntry, RunEventsRequest, RunShowRequest, RunSummary, TaskCheckReport } from '@granule/contracts';
import { query, type NatsSession } from '../connection/nats-session';
import { toJson, toTable, toYaml, writeOut } from '../output';
import { renderRecap } from './run-format';

/** What a check run (ADR 0031) found for one task instance. */
export interface CheckedTask {
  key: string;
  /** The run the task ran in (a strategy run's phase run). */
  runId: string;
  result: 'would change' | 'no change' | 'unknown' | 'skipped' | 'failed';
  /** How the agent reached the verdict, why it skipped the task, or why it failed. */
  detail?: string;
  diff?: string;
}

/** Events read per `runs.events` request: each may carry a diff of up to 16 KiB. */
const EVENTS_PER_PAGE = 25;

const RESULT_OF: Record<TaskCheckReport['verdict'], CheckedTask['result']> = {
  would_change: 'would change',
  no_change: 'no change',
  unknown: 'unknown',
  skipped: 'skipped',
};

/** Each task instance's last word in a run's events, in the order they ended. */
export function checkedTasks(runId: string, entries: readonly RunEventEntry[]): CheckedTask[] {
  const tasks = new Map<string, CheckedTask>();
  const set = (t: CheckedTask): void => {
    tasks.delete(t.key);
    tasks.set(t.key, t);
  };
  for (const { event: e } of entries) {
    switch (e.type) {
      case 'TaskSucceeded': {
        const check = e.data.check;
        set({
          key: e.data.key,
          runId,
          result: check ? RESULT_OF[check.verdict] : 'unknown',
          ...(check?.reason ? { detail: check.reason } : {}),
          ...(check?.diff ? { diff: check.diff } : {}),
        });
        break;
      }
      case 'TaskSkipped':
        set({
          key: e.data.key,
          runId,
          result: 'skipped',
          detail: e.data.reason === 'check' ? (e.data.detail ?? 'not run in a check') : 'failed; fail_on_error: false',
        });
        break;
      case 'TaskFailed':
        set({ key: e.data.key, runId, result: 'failed', detail: e.data.error ?? `exit code ${e.data.exitCode}` });
        break;
      case 'TaskTimedOut':
        set({ key: e.data.key, runId, result: 'failed', detail: 'timed out' });
        break;
    }
  }
  return [...tasks.values()];
}

/** A run's events up to `lastVersion`, a page at a time. */
async function eventsOf(session: NatsSession, runId: string, lastVersion: number): Promise<RunEventEntry[]> {
  const all: RunEventEntry[] = [];
  while ((all.at(-1)?.version ?? 0) < lastVersion) {
    const after = all.at(-1)?.version ?? 0;
    const page = await query<RunEventsRequest, RunEventEntry[]>(session, session.subjects.runs.events, {
      runId,
      after,
      upTo: Math.min(after + EVENTS_PER_PAGE, lastVersion),
    });
    if (page.length === 0) break;
    all.push(...page);
  }
  return all;
}

/**
 * What a finished check run found, task by task (a strategy run: its phase runs' tasks).
 * `lastVersion`: the run's last event (`RunSummary.version`).
 */
export async function loadCheckRecap(session: NatsSession, runId: string, lastVersion: number): Promise<CheckedTask[]> {
  const entries = await eventsOf(session, runId, lastVersion);
  const tasks = checkedTasks(runId, entries);
  for (const { event } of entries)
    if (event.type === 'StrategyPhaseStarted') {
      const child = await query<RunShowRequest, RunSummary>(session, session.subjects.runs.show, {
        runId: event.data.childRunId,
      });
      tasks.push(...(await loadCheckRecap(session, child.runId, child.version)));
    }
  return tasks;
}

/** Counts by result, in the recap's order. */
export function checkCounts(tasks: readonly CheckedTask[]): Record<CheckedTask['result'], number> {
  const counts = { 'would change': 0, 'no change': 0, unknown: 0, skipped: 0, failed: 0 };
  for (const t of tasks) counts[t.result]++;
  return counts;
}

/** The check recap: counts, a line per task instance, then (with `withDiffs`) each diff. */
export function renderCheckRecap(runId: string, tasks: readonly CheckedTask[], withDiffs: boolean): string {
  const counts = Object.entries(checkCounts(tasks))
    .filter(([result, n]) => n > 0 || result === 'would change')
    .map(([result, n]) => `${n} ${result}`)
    .join(', ');
  // By task and node, so two checks of the same plan read alike.
  const sorted = [...tasks].sort((a, b) => a.key.localeCompare(b.key, 'en', { numeric: true }));
  const table = toTable(
    sorted.map((t) => ({ task: t.key, result: t.result, detail: t.detail ?? '' })),
    ['task', 'result', 'detail'],
  );
  const diffs = withDiffs
    ? sorted
        .filter((t) => t.diff)
        .map(
          (t) =>
            `--- diff of ${t.key}${t.runId !== runId ? ` (run ${t.runId})` : ''}\n${t.diff?.replace(/\n?$/, '\n')}`,
        )
        .join('')
    : '';
  return `CHECK run ${runId}: ${counts} (nothing was changed)\n${table}${diffs}`;
}

/** The end of `deploy --check --watch`: the run's recap and what the check found (`-o json|yaml`: both in one document, the findings under `checked`). */
export async function writeCheckRecap(
  session: NatsSession,
  summary: RunSummary,
  format: 'text' | 'json' | 'yaml',
  withDiffs: boolean,
): Promise<void> {
  const tasks = await loadCheckRecap(session, summary.runId, summary.version);
  if (format === 'text') {
    await writeOut(renderRecap(summary) + renderCheckRecap(summary.runId, tasks, withDiffs));
    return;
  }
  // `check: true` (the summary's) says it was a check run; `checked` is what it found.
  const doc = {
    ...summary,
    checked: {
      counts: checkCounts(tasks),
      tasks: tasks.map(({ diff, ...t }) => ({ ...t, ...(withDiffs && diff ? { diff } : {}) })),
    },
  };
  await writeOut(format === 'json' ? toJson(doc) : toYaml(doc));
}
