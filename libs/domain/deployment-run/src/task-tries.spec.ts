import type { RunEvent, TaskProgressMessage } from '@granule/run-events';
import { buildPlan, planInstances } from '@granule/planner';
import { assertNoErrors, parseTaskFile } from '@granule/task-model';
import { decide } from './decide';
import type { RunCommand } from './decide';
import { toExecutablePlan } from './executable-plan';
import type { ExecutablePlan, PlanDocument } from './executable-plan';
import { evolve, foldRun, initialRunState, instanceStatuses } from './run-state';
import type { RunState } from './run-state';
import { summarizeRun, taskInstances } from './run-summary';

const T0 = '2026-01-01T00:00:00.000Z';
const at = (seconds: number): string => new Date(Date.parse(T0) + seconds * 1000).toISOString();

const TASKS = `
- {id: a, type: shell, roles: '*', parameters: {cmd: a, retries: 2}}
- {id: b, type: shell, roles: '*', requires: [a], parameters: {cmd: b}}
`;

function plan(): ExecutablePlan {
  const p = buildPlan({
    tasks: assertNoErrors(parseTaskFile(TASKS, 'tasks.yaml')),
    nodes: [
      { uid: 'n1', roles: ['x'] },
      { uid: 'n2', roles: ['x'] },
    ],
  });
  const doc: PlanDocument = { instances: planInstances(p), groups: p.groups, concurrency: p.concurrency };
  return toExecutablePlan(doc);
}

/** Given a run with `a` dispatched on both nodes. */
function givenDispatched(): {
  p: ExecutablePlan;
  events: RunEvent[];
  when: (c: RunCommand) => RunEvent[];
  state: () => RunState;
} {
  const p = plan();
  let state = initialRunState('r1');
  const events: RunEvent[] = [];
  const when = (c: RunCommand): RunEvent[] => {
    const out = decide(state, c, p);
    for (const e of out) state = evolve(state, e, p);
    events.push(...out);
    return out;
  };
  when({ type: 'RequestDeployment', request: { runId: 'r1', graph: 'default', dryRun: false, noop: false } });
  when({ type: 'AcceptPlan', planId: 'p1', planHash: 'h', offlineNodes: [], at: T0 });
  when({ type: 'DispatchReady', at: T0, limits: { maxBusyNodes: 10 } });
  return { p, events, when, state: () => state };
}

function progress(
  key: string,
  status: TaskProgressMessage['status'],
  seconds: number,
  more: Partial<TaskProgressMessage> = {},
): RunCommand {
  const node = key.split('@')[1];
  return {
    type: 'RecordProgress',
    message: { runId: 'r1', key, node, attempt: 1, dispatchId: `r1/${key}/1`, status, at: at(seconds), ...more },
  };
}

describe('run - tries on the host', () => {
  it('a failed try the agent runs again is recorded as TaskAttemptFailed with its exit code and reason; the task keeps running', () => {
    const run = givenDispatched();
    const events = run.when(
      progress('a@n1', 'attempt_failed', 2, {
        try: 1,
        tries: 3,
        exitCode: 7,
        error: 'shell command failed: exit code 7',
        startedAt: at(1),
        durationMs: 900,
      }),
    );
    expect(events).toEqual([
      { type: 'TaskStarted', data: { key: 'a@n1', attempt: 1, at: at(1) } },
      {
        type: 'TaskAttemptFailed',
        data: {
          key: 'a@n1',
          attempt: 1,
          try: 1,
          of: 3,
          exitCode: 7,
          reason: 'shell command failed: exit code 7',
          durationMs: 900,
          at: at(2),
        },
      },
    ]);
    expect(instanceStatuses(run.state()).get('a@n1')).toBe('running');
  });

  it('a second failed try adds no second TaskStarted, and the outcome records the tries made', () => {
    const run = givenDispatched();
    run.when(progress('a@n1', 'attempt_failed', 2, { try: 1, tries: 3, exitCode: 1 }));
    expect(
      run.when(progress('a@n1', 'attempt_failed', 4, { try: 2, tries: 3, exitCode: 1 })).map((e) => e.type),
    ).toEqual(['TaskAttemptFailed']);
    const done = run.when(progress('a@n1', 'succeeded', 6, { try: 3, exitCode: 0, durationMs: 5000 }));
    expect(done).toEqual([
      {
        type: 'TaskSucceeded',
        data: { key: 'a@n1', attempt: 1, exitCode: 0, durationMs: 5000, outputTail: '', at: at(6), tries: 3 },
      },
    ]);
  });

  it('a try reported after the outcome (a late or repeated message) changes nothing', () => {
    const run = givenDispatched();
    run.when(progress('a@n1', 'failed', 2, { try: 1, exitCode: 1 }));
    expect(run.when(progress('a@n1', 'attempt_failed', 3, { try: 1, tries: 3, exitCode: 1 }))).toEqual([]);
  });

  it('a fold of the events gives the same state (TaskAttemptFailed moves nothing on)', () => {
    const run = givenDispatched();
    run.when(progress('a@n1', 'attempt_failed', 2, { try: 1, tries: 3, exitCode: 1 }));
    const folded = foldRun('r1', run.events, run.p);
    expect([...instanceStatuses(folded)]).toEqual([...instanceStatuses(run.state())]);
    expect(folded.busyNodes).toBe(run.state().busyNodes);
  });
});

describe('summarizeRun and taskInstances - tries', () => {
  it('runs show counts failed tries and the tasks that needed more than one', () => {
    const run = givenDispatched();
    run.when(progress('a@n1', 'attempt_failed', 2, { try: 1, tries: 3, exitCode: 1 }));
    run.when(progress('a@n1', 'attempt_failed', 3, { try: 2, tries: 3, exitCode: 1 }));
    run.when(progress('a@n2', 'attempt_failed', 3, { try: 1, tries: 3, exitCode: 1 }));
    const summary = summarizeRun(run.state(), run.events);
    expect(summary.failedTries).toBe(3);
    expect(summary.retriedTasks).toBe(2);
  });

  it('lists each task instance with status, tries, exit code, start, duration and node; filters by node and status', () => {
    const run = givenDispatched();
    run.when(
      progress('a@n1', 'attempt_failed', 2, { try: 1, tries: 3, exitCode: 4, error: 'exit code 4', startedAt: at(1) }),
    );
    run.when(progress('a@n1', 'succeeded', 5, { try: 2, exitCode: 0, durationMs: 4000 }));
    run.when(
      progress('a@n2', 'failed', 3, { try: 3, exitCode: 9, durationMs: 2000, error: 'exit code 9', startedAt: at(1) }),
    );
    const rows = taskInstances(run.state(), run.events);
    expect(rows).toEqual(
      expect.arrayContaining([
        {
          key: 'a@n1',
          task: 'a',
          node: 'n1',
          status: 'succeeded',
          tries: 2,
          exitCode: 0,
          startedAt: at(1),
          durationMs: 4000,
        },
        {
          key: 'a@n2',
          task: 'a',
          node: 'n2',
          status: 'failed',
          tries: 3,
          exitCode: 9,
          startedAt: at(1),
          durationMs: 2000,
          error: 'exit code 9',
        },
        { key: 'b@n2', task: 'b', node: 'n2', status: 'dep_failed', tries: 0, exitCode: null },
      ]),
    );
    expect(rows.map((r) => r.key).sort()).toEqual(['a@n1', 'a@n2', 'b@n1', 'b@n2']);
    expect(taskInstances(run.state(), run.events, { node: 'n2' }).map((r) => r.key)).toEqual(['a@n2', 'b@n2']);
    expect(taskInstances(run.state(), run.events, { status: 'failed' }).map((r) => r.key)).toEqual(['a@n2']);
  });
});
