import type { RunEvent, TaskProgressMessage } from '@granule/run-events';
import { buildPlan, planInstances, simulatePlan } from '@granule/planner';
import { assertNoErrors, parseTaskFile } from '@granule/task-model';
import type { NodeSpec } from '@granule/task-model';
import { RunError } from '@granule/run-events';
import { decide } from './decide';
import { runDecider } from './run.decider';
import type { RunCommand } from './decide';
import { toExecutablePlan } from './executable-plan';
import type { ExecutablePlan, PlanDocument } from './executable-plan';
import { evolve, foldRun, initialRunState, instanceStatuses } from './run-state';
import { summarizeRun } from './run-summary';
import type { RunState } from './run-state';

const T0 = '2026-01-01T00:00:00.000Z';
const at = (seconds: number): string => new Date(Date.parse(T0) + seconds * 1000).toISOString();

function planOf(yaml: string, nodes: NodeSpec[]): ExecutablePlan {
  const plan = buildPlan({ tasks: assertNoErrors(parseTaskFile(yaml, 'deployment_tasks.yaml')), nodes });
  const doc: PlanDocument = { instances: planInstances(plan), groups: plan.groups, concurrency: plan.concurrency };
  return toExecutablePlan(doc);
}

/** Given/When/Then over decide + evolve: every decision is applied before the next one. */
class Scenario {
  readonly events: RunEvent[] = [];
  state: RunState;

  constructor(
    readonly plan: ExecutablePlan,
    options: { dryRun?: boolean; offline?: string[]; only?: string[]; tolerant?: boolean; check?: boolean } = {},
  ) {
    this.state = initialRunState('r1');
    this.when({
      type: 'RequestDeployment',
      request: {
        runId: 'r1',
        graph: 'default',
        dryRun: options.dryRun ?? false,
        noop: false,
        ...(options.tolerant ? { tolerateNodeFailures: true } : {}),
        ...(options.check ? { check: true } : {}),
      },
    });
    this.when({
      type: 'AcceptPlan',
      planId: 'p1',
      planHash: 'h',
      offlineNodes: options.offline ?? [],
      only: options.only,
      at: T0,
    });
  }

  when(command: RunCommand): RunEvent[] {
    const events = decide(this.state, command, this.plan);
    for (const e of events) this.state = evolve(this.state, e, this.plan);
    this.events.push(...events);
    return events;
  }

  dispatch(maxBusyNodes = 100, seconds = 0): string[] {
    return this.when({ type: 'DispatchReady', at: at(seconds), limits: { maxBusyNodes } }).map((e) =>
      e.type === 'TaskDispatched' ? e.data.key : `?${e.type}`,
    );
  }

  report(key: string, status: TaskProgressMessage['status'], seconds = 1, attempt = 1): RunEvent[] {
    const node = key.split('@')[1];
    return this.when({
      type: 'RecordProgress',
      message: { runId: 'r1', key, node, attempt, dispatchId: `r1/${key}/${attempt}`, status, at: at(seconds) },
    });
  }

  finish(seconds = 99): RunEvent[] {
    return this.when({ type: 'Finish', at: at(seconds) });
  }

  status(key: string): string | undefined {
    return instanceStatuses(this.state).get(key);
  }

  /** Runs everything to the end, every task succeeding; returns the keys in dispatch order. */
  runAll(): string[] {
    const order: string[] = [];
    for (let round = 0; round < 100; round++) {
      const batch = this.dispatch();
      if (batch.length === 0) break;
      order.push(...batch);
      for (const key of batch) this.report(key, 'succeeded');
    }
    return order;
  }
}

const types = (events: RunEvent[]): string[] => events.map((e) => e.type);

const CHAIN = `
- {id: a, type: shell, roles: '*', parameters: {cmd: a}}
- {id: b, type: shell, roles: '*', requires: [a], parameters: {cmd: b}}
- {id: c, type: shell, roles: [controller], requires: [b], parameters: {cmd: c}}
`;
const nodes = [
  { uid: 'n1', roles: ['controller'] },
  { uid: 'n2', roles: ['compute'] },
];

describe('run - reports that do not answer a dispatch', () => {
  const forged = (run: Scenario, key: string, change: Partial<TaskProgressMessage>): RunEvent[] =>
    run.when({
      type: 'RecordProgress',
      message: {
        runId: 'r1',
        key,
        node: key.split('@')[1],
        attempt: 1,
        dispatchId: `r1/${key}/1`,
        status: 'succeeded',
        at: at(1),
        ...change,
      },
    });

  it('a success naming another node than the one the task was dispatched to changes nothing', () => {
    const run = new Scenario(planOf(CHAIN, nodes));
    run.dispatch();
    expect(forged(run, 'a@n1', { node: 'n2' })).toEqual([]);
    expect(run.status('a@n1')).toBe('dispatched');
    expect(run.report('a@n1', 'succeeded').map((e) => e.type)).toEqual(['TaskSucceeded']);
  });

  it('a success whose dispatch id the run did not issue changes nothing', () => {
    const run = new Scenario(planOf(CHAIN, nodes));
    run.dispatch();
    expect(forged(run, 'a@n1', { dispatchId: 'r1/a@n1/7' })).toEqual([]);
    expect(forged(run, 'a@n1', { dispatchId: 'other-run/a@n1/1' })).toEqual([]);
    expect(run.status('a@n1')).toBe('dispatched');
  });
});

describe('run - everything succeeds', () => {
  it('dispatches what is ready, one task per node, and succeeds when all is done', () => {
    const run = new Scenario(planOf(CHAIN, nodes));
    expect(run.dispatch()).toEqual(['a@n1', 'a@n2']);
    expect(run.dispatch()).toEqual([]); // both nodes busy
    run.report('a@n1', 'started');
    run.report('a@n1', 'succeeded');
    expect(run.dispatch()).toEqual(['b@n1']);
    expect(run.finish()).toEqual([]); // still busy
    run.report('a@n2', 'succeeded');
    run.report('b@n1', 'succeeded');
    expect(run.dispatch().sort()).toEqual(['b@n2', 'c@n1']);
    run.report('b@n2', 'succeeded');
    run.report('c@n1', 'succeeded');
    expect(run.finish()).toEqual([{ type: 'DeploymentSucceeded', data: { at: at(99), failedNodes: [] } }]);
    expect(run.state.phase).toBe('succeeded');
  });

  it('an outcome with no `started` before it records TaskStarted at its startedAt, in the same decision', () => {
    const run = new Scenario(planOf(CHAIN, nodes));
    run.dispatch();
    const outcome = (key: string, status: TaskProgressMessage['status'], startedAt?: string): RunEvent[] =>
      run.when({
        type: 'RecordProgress',
        message: {
          runId: 'r1',
          key,
          node: key.split('@')[1],
          attempt: 1,
          dispatchId: `r1/${key}/1`,
          status,
          at: at(2),
          ...(startedAt ? { startedAt } : {}),
        },
      });
    // A quick task: only its outcome came, carrying when it started.
    expect(outcome('a@n1', 'succeeded', at(1))).toEqual([
      { type: 'TaskStarted', data: { key: 'a@n1', attempt: 1, at: at(1) } },
      {
        type: 'TaskSucceeded',
        data: { key: 'a@n1', attempt: 1, exitCode: null, durationMs: 0, outputTail: '', at: at(2) },
      },
    ]);
    expect(run.state.startedAt[run.plan.index.get('a@n1') as number]).toBe(Date.parse(at(1)));
    // `started` was recorded already: the outcome adds only itself.
    run.report('a@n2', 'started', 1);
    expect(types(outcome('a@n2', 'succeeded', at(1)))).toEqual(['TaskSucceeded']);
    // An outcome without startedAt (an answer from the journal) records only the outcome.
    run.dispatch();
    expect(types(outcome('b@n1', 'succeeded'))).toEqual(['TaskSucceeded']);
  });

  it('records every transition as an event, so a fold gives the same state', () => {
    const run = new Scenario(planOf(CHAIN, nodes));
    run.runAll();
    run.finish();
    const replayed = foldRun('r1', run.events, run.plan);
    expect([...instanceStatuses(replayed)]).toEqual([...instanceStatuses(run.state)]);
    expect(replayed.phase).toBe('succeeded');
    expect(types(run.events).filter((t) => t === 'TaskDispatched')).toHaveLength(5);
  });

  it('prefers the ready task with the most work after it', () => {
    const plan = planOf(
      `
- {id: leaf, type: shell, roles: '*', parameters: {cmd: x}}
- {id: root, type: shell, roles: '*', parameters: {cmd: x}}
- {id: mid, type: shell, roles: '*', requires: [root], parameters: {cmd: x}}
- {id: end, type: shell, roles: '*', requires: [mid], parameters: {cmd: x}}
`,
      [{ uid: 'n1', roles: ['x'] }],
    );
    const run = new Scenario(plan);
    expect(run.dispatch()).toEqual(['root@n1']);
  });

  it('keeps to the cluster-wide limit of busy nodes and to task concurrency', () => {
    const three = [1, 2, 3].map((i) => ({ uid: `n${i}`, roles: ['x'] }));
    const limited = new Scenario(planOf(CHAIN, three));
    expect(limited.dispatch(2)).toHaveLength(2);
    const oneByOne = new Scenario(
      planOf("- {id: m, type: shell, roles: '*', parameters: {cmd: x, strategy: {type: one_by_one}}}", three),
    );
    expect(oneByOne.dispatch()).toEqual(['m@n1']);
    oneByOne.report('m@n1', 'succeeded');
    expect(oneByOne.dispatch()).toEqual(['m@n2']);
  });

  it('waits for one of an any-of group', () => {
    const plan = planOf(
      `
- {id: db, type: shell, roles: [controller], parameters: {cmd: x}}
- {id: agent, type: shell, roles: [compute], cross-depends: [{name: db, role: [controller], policy: any}], parameters: {cmd: x}}
`,
      [
        { uid: 'c1', roles: ['controller'] },
        { uid: 'c2', roles: ['controller'] },
        { uid: 'k1', roles: ['compute'] },
      ],
    );
    const run = new Scenario(plan);
    expect(run.dispatch().sort()).toEqual(['db@c1', 'db@c2']);
    run.report('db@c2', 'succeeded');
    expect(run.dispatch()).toEqual(['agent@k1']);
  });

  it('plans but runs nothing in dry-run mode', () => {
    const run = new Scenario(planOf(CHAIN, nodes), { dryRun: true });
    expect(types(run.events)).toEqual(['DeploymentRequested', 'PlanAccepted', 'DeploymentSucceeded']);
    expect(run.dispatch()).toEqual([]);
  });
});

const GROUPED = `
- {id: controller, type: group, roles: [controller], fault_tolerance: 0}
- {id: compute, type: group, roles: [compute], requires: [controller], fault_tolerance: 1}
- {id: setup, type: shell, roles: '*', parameters: {cmd: x}}
- {id: configure, type: shell, roles: '*', requires: [setup], parameters: {cmd: x}}
- {id: report, type: shell, roles: [controller], stage: post_deployment, cross-depends: [{name: configure, role: [compute]}], parameters: {cmd: x}}
`;
const fleet = [
  { uid: 'ctl', roles: ['controller'] },
  { uid: 'k1', roles: ['compute'] },
  { uid: 'k2', roles: ['compute'] },
  { uid: 'k3', roles: ['compute'] },
];

function throughController(run: Scenario): void {
  expect(run.dispatch()).toEqual(['setup@ctl']);
  run.report('setup@ctl', 'succeeded');
  expect(run.dispatch()).toEqual(['configure@ctl']);
  run.report('configure@ctl', 'succeeded');
  expect(run.dispatch().sort()).toEqual(['setup@k1', 'setup@k2', 'setup@k3']);
}

describe('run - failures', () => {
  it('fails the node, marks its remaining tasks and their dependants dep_failed, and goes on within tolerance', () => {
    const run = new Scenario(planOf(GROUPED, fleet));
    throughController(run);
    const failed = run.report('setup@k1', 'failed');
    expect(types(failed)).toEqual(['TaskFailed', 'NodeFailed']);
    expect(failed[1]).toEqual({ type: 'NodeFailed', data: { node: 'k1', reason: 'task_failed', task: 'setup' } });
    expect([run.status('setup@k1'), run.status('configure@k1'), run.status('report@ctl')]).toEqual([
      'failed',
      'dep_failed',
      'dep_failed',
    ]);
    run.report('setup@k2', 'succeeded');
    run.report('setup@k3', 'succeeded');
    expect(run.dispatch().sort()).toEqual(['configure@k2', 'configure@k3']);
    run.report('configure@k2', 'succeeded');
    run.report('configure@k3', 'succeeded');
    expect(run.finish()).toEqual([{ type: 'DeploymentSucceeded', data: { at: at(99), failedNodes: ['k1'] } }]);
  });

  it('stops gracefully when a group exceeds its tolerance: no new task, running ones finish, run failed', () => {
    const run = new Scenario(planOf(GROUPED, fleet));
    throughController(run);
    run.report('setup@k1', 'failed');
    const second = run.report('setup@k2', 'timed_out');
    expect(types(second)).toEqual(['TaskTimedOut', 'NodeFailed', 'GroupToleranceExceeded', 'DeploymentStopRequested']);
    expect(second[2]).toEqual({
      type: 'GroupToleranceExceeded',
      data: { group: 'compute', failed: ['k1', 'k2'], tolerance: 1 },
    });
    expect(run.state.phase).toBe('stopping');
    expect(run.finish()).toEqual([]); // setup@k3 still runs
    run.report('setup@k3', 'succeeded');
    expect(run.dispatch()).toEqual([]);
    expect(run.finish()).toEqual([
      {
        type: 'DeploymentFailed',
        data: { at: at(99), reason: 'too many failed nodes in group compute', failedNodes: ['k1', 'k2'] },
      },
    ]);
  });

  it('a tolerated node failure does not block the group end: what follows the group still runs on the other nodes', () => {
    const run = new Scenario(
      planOf(
        `
- {id: compute, type: group, roles: [compute], fault_tolerance: 1, strategy: {type: one_by_one}, required_for: [deploy_end]}
- {id: setup, type: shell, roles: [compute], parameters: {cmd: x}}
- {id: post, type: shell, roles: '*', stage: post_deployment, parameters: {cmd: x}}
`,
        [
          { uid: 'k1', roles: ['compute'] },
          { uid: 'k2', roles: ['compute'] },
        ],
      ),
    );
    expect(run.dispatch()).toEqual(['setup@k1']);
    expect(types(run.report('setup@k1', 'failed'))).toEqual(['TaskFailed', 'NodeFailed']);
    // The next batch of the one_by_one group starts, then post_deployment on the node that is left.
    expect(run.dispatch()).toEqual(['setup@k2']);
    run.report('setup@k2', 'succeeded');
    expect(run.dispatch()).toEqual(['post@k2']);
    run.report('post@k2', 'succeeded');
    expect([run.status('post@k1'), run.status('compute@k1')]).toEqual(['dep_failed', 'skipped']);
    expect(run.finish()).toEqual([{ type: 'DeploymentSucceeded', data: { at: at(99), failedNodes: ['k1'] } }]);
  });

  it('stops the run when a node in no group (critical) fails', () => {
    const run = new Scenario(planOf(CHAIN, nodes));
    run.dispatch();
    expect(types(run.report('a@n2', 'failed'))).toEqual(['TaskFailed', 'NodeFailed', 'DeploymentStopRequested']);
    run.report('a@n1', 'succeeded');
    expect(run.finish()[0]).toMatchObject({
      type: 'DeploymentFailed',
      data: { reason: 'node n2 failed and belongs to no fault-tolerance group' },
    });
  });

  it('counts a failed task with fail_on_error: false as skipped', () => {
    const run = new Scenario(
      planOf(
        "- {id: a, type: shell, roles: '*', fail_on_error: false, parameters: {cmd: x}}\n- {id: b, type: shell, roles: '*', requires: [a], parameters: {cmd: x}}",
        [{ uid: 'n1', roles: ['x'] }],
      ),
    );
    run.dispatch();
    expect(run.report('a@n1', 'failed')).toEqual([
      { type: 'TaskSkipped', data: { key: 'a@n1', reason: 'fail_on_error', at: at(1) } },
    ]);
    expect(run.dispatch()).toEqual(['b@n1']);
  });

  it('ignores stale and repeated results', () => {
    const run = new Scenario(planOf(CHAIN, nodes));
    run.dispatch();
    expect(run.report('a@n1', 'succeeded', 1, 2)).toEqual([]); // another attempt
    expect(run.report('a@n1', 'succeeded')).toHaveLength(1);
    expect(run.report('a@n1', 'succeeded')).toEqual([]);
    expect(run.report('a@n1', 'failed')).toEqual([]);
    expect(run.report('nope@n1', 'failed')).toEqual([]);
  });
});

describe('run - nodes and time', () => {
  it('refuses to start when a critical node is offline, naming it', () => {
    const run = new Scenario(planOf(GROUPED, fleet), { offline: ['ctl', 'k2'] });
    expect(run.events.at(-1)).toEqual({
      type: 'DeploymentRefused',
      data: {
        code: 'OFFLINE_CRITICAL_NODES',
        reason: 'critical nodes are offline: ctl',
        offlineCriticalNodes: ['ctl'],
      },
    });
    expect(run.state.phase).toBe('refused');
  });

  it('many critical nodes offline - the reason names ten and counts the rest; the event lists them all', () => {
    const many = Array.from({ length: 12 }, (_, k) => ({ uid: `m${String(k + 1).padStart(2, '0')}`, roles: ['x'] }));
    const run = new Scenario(planOf(CHAIN, many), { offline: many.map((n) => n.uid) });
    expect(run.events.at(-1)).toEqual({
      type: 'DeploymentRefused',
      data: {
        code: 'OFFLINE_CRITICAL_NODES',
        reason: 'critical nodes are offline: m01, m02, m03, m04, m05, m06, m07, m08, m09, m10 and 2 more',
        offlineCriticalNodes: many.map((n) => n.uid),
      },
    });
  });

  it('fails offline nodes inside tolerance before the run and runs the rest', () => {
    const run = new Scenario(planOf(GROUPED, fleet), { offline: ['k2'] });
    expect(types(run.events)).toEqual(['DeploymentRequested', 'PlanAccepted', 'NodeFailed']);
    throughControllerExcept(run, 'k2');
  });

  it('times a task out after its budget (timeout x attempts + pauses + grace)', () => {
    const run = new Scenario(
      planOf("- {id: a, type: shell, roles: '*', parameters: {cmd: x, timeout: 10, retries: 1, interval: 5}}", [
        { uid: 'n1', roles: ['x'] },
      ]),
    );
    run.dispatch(100, 0);
    run.report('a@n1', 'started', 0);
    // 10 x 2 + 5 + 30 = 55 s.
    expect(run.when({ type: 'CheckHealth', at: at(55), offlineNodes: [] })).toEqual([]);
    const late = run.when({ type: 'CheckHealth', at: at(56), offlineNodes: [] });
    expect(types(late)).toEqual(['TaskTimedOut', 'NodeFailed', 'DeploymentStopRequested']);
    expect(run.status('a@n1')).toBe('timed_out');
  });

  it('counts a dispatch not started yet from when the message stream took it, and not while it is unsent', () => {
    const plan = planOf("- {id: a, type: shell, roles: '*', parameters: {cmd: x, timeout: 10, retries: 0}}", [
      { uid: 'n1', roles: ['x'] },
    ]);
    // Budget 10 + 30 = 40 s. Recorded at 0, never started.
    const recordedOnly = new Scenario(plan);
    recordedOnly.dispatch(100, 0);
    expect(types(recordedOnly.when({ type: 'CheckHealth', at: at(41), offlineNodes: [] }))).toContain('TaskTimedOut');

    // Still waiting to leave the orchestrator at 100 s: not the agent's delay.
    const unsent = new Scenario(plan);
    unsent.dispatch(100, 0);
    expect(
      unsent.when({ type: 'CheckHealth', at: at(100), offlineNodes: [], dispatchUnsent: new Set(['a@n1']) }),
    ).toEqual([]);

    // Taken by the stream at 30 s: the budget runs out at 70 s, not 40 s.
    const late = new Scenario(plan);
    late.dispatch(100, 0);
    const sentAt = new Map([['a@n1', Date.parse(at(30))]]);
    expect(late.when({ type: 'CheckHealth', at: at(69), offlineNodes: [], dispatchSentAt: sentAt })).toEqual([]);
    expect(types(late.when({ type: 'CheckHealth', at: at(71), offlineNodes: [], dispatchSentAt: sentAt }))).toContain(
      'TaskTimedOut',
    );
  });

  it('fails the running task of a node that goes offline', () => {
    const run = new Scenario(planOf(GROUPED, fleet));
    throughController(run);
    const events = run.when({ type: 'CheckHealth', at: at(5), offlineNodes: ['k3', 'unknown'] });
    expect(types(events)).toEqual(['TaskFailed', 'NodeFailed']);
    expect(events[0]).toMatchObject({ data: { key: 'setup@k3', error: 'node k3 went offline' } });
    expect(run.state.busy[run.plan.nodeIndex.get('k3') as number]).toBe(-1);
  });
});

function throughControllerExcept(run: Scenario, down: string): void {
  expect(run.dispatch()).toEqual(['setup@ctl']);
  run.report('setup@ctl', 'succeeded');
  run.dispatch();
  run.report('configure@ctl', 'succeeded');
  const up = ['k1', 'k2', 'k3'].filter((n) => n !== down);
  expect(run.dispatch().sort()).toEqual(up.map((n) => `setup@${n}`));
}

describe('run - operator commands', () => {
  it('stops gracefully, ends stopped, and resumes where it stopped', () => {
    const run = new Scenario(planOf(CHAIN, nodes));
    run.dispatch();
    expect(types(run.when({ type: 'Stop', at: at(1) }))).toEqual(['DeploymentStopRequested']);
    expect(run.when({ type: 'Stop', at: at(1) })).toEqual([]);
    run.report('a@n1', 'succeeded');
    expect(run.dispatch()).toEqual([]);
    expect(run.finish()).toEqual([]); // a@n2 still runs
    run.report('a@n2', 'succeeded');
    expect(run.finish()).toEqual([{ type: 'DeploymentStopped', data: { at: at(99), failedNodes: [] } }]);
    expect(() => run.when({ type: 'Stop', at: at(100) })).toThrow(RunError);
    expect(types(run.when({ type: 'Resume', at: at(100) }))).toEqual(['DeploymentResumed']);
    expect(run.dispatch().sort()).toEqual(['b@n1', 'b@n2']);
  });

  it('resumes within the resume window of its stop; after it, refuses naming the stop, the window and what to do', () => {
    const stopped = (): Scenario => {
      const run = new Scenario(planOf(CHAIN, nodes));
      run.dispatch();
      run.when({ type: 'Stop', at: at(1) });
      run.report('a@n1', 'succeeded');
      run.report('a@n2', 'succeeded');
      run.finish(); // stopped at at(99)
      return run;
    };
    const DAY = 86_400;
    expect(types(stopped().when({ type: 'Resume', at: at(99 + 30 * DAY) }))).toEqual(['DeploymentResumed']);
    const late = stopped();
    let refusal: unknown;
    try {
      late.when({ type: 'Resume', at: at(99 + 30 * DAY + 1) });
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(RunError);
    expect(refusal).toMatchObject({
      code: 'RUN_RESUME_WINDOW_CLOSED',
      message:
        'run r1 was stopped at 2026-01-01T00:01:39.000Z and could be resumed until 2026-01-31T00:01:39.000Z (30 days): its plan is stale and its packages may be gone; start a new deployment',
    });
    expect(late.state.phase).toBe('stopped');
  });

  it('records who stopped and who resumed the run, and runs show names who stopped it', () => {
    const run = new Scenario(planOf(CHAIN, nodes));
    run.dispatch();
    expect(run.when({ type: 'Stop', at: at(1), requestedBy: 'alice' })).toEqual([
      {
        type: 'DeploymentStopRequested',
        data: { reason: 'operator', detail: 'stopped by the operator', requestedBy: 'alice' },
      },
    ]);
    run.report('a@n1', 'succeeded');
    run.report('a@n2', 'succeeded');
    run.finish();
    expect(summarizeRun(run.state, run.events).reason).toBe('stopped by the operator (alice)');
    expect(run.when({ type: 'Resume', at: at(100), requestedBy: 'bob' })).toEqual([
      { type: 'DeploymentResumed', data: { at: at(100), requestedBy: 'bob' } },
    ]);
  });

  it('stops a run that is not planned yet (its planning failed and waits for another try) at once; it cannot be resumed', () => {
    let state = initialRunState('r2');
    const apply = (command: RunCommand): RunEvent[] => {
      const events = decide(state, command);
      for (const e of events) state = evolve(state, e);
      return events;
    };
    apply({ type: 'RequestDeployment', request: { runId: 'r2', graph: 'default', dryRun: false, noop: false } });
    expect(apply({ type: 'Stop', at: at(1) })).toEqual([
      { type: 'DeploymentStopRequested', data: { reason: 'operator', detail: 'stopped by the operator' } },
      { type: 'DeploymentStopped', data: { at: at(1), failedNodes: [], beforeStart: true } },
    ]);
    expect(state.phase).toBe('stopped');
    expect(() => apply({ type: 'Resume', at: at(2) })).toThrow(
      'run r2 was stopped before it was planned: start the deployment again',
    );
  });

  it('ends an expired request: the decider lets go of it and a Stop is refused with RUN_ENDED', () => {
    let state = initialRunState('r3');
    const apply = (command: RunCommand): RunEvent[] => {
      const events = runDecider.decide(state, command, undefined);
      for (const e of events) state = runDecider.evolve(state, e, undefined);
      return events;
    };
    const request = { runId: 'r3', graph: 'default', dryRun: false, noop: false };
    const expiry = { commandId: 'c3', command: 'StartDeployment', storedAt: T0, ttlSeconds: 60, expiredAt: at(120) };
    expect(types(apply({ type: 'ExpireRequest', request, expiry }))).toEqual([
      'DeploymentRequested',
      'DeploymentExpired',
    ]);
    expect(state.phase).toBe('expired');
    expect(runDecider.isEnded(state)).toBe(true);
    let refusal: unknown;
    try {
      apply({ type: 'Stop', at: at(121) });
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(RunError);
    expect((refusal as RunError).code).toBe('RUN_ENDED');
    expect(state.phase).toBe('expired');
  });

  it('refuses to resume a run that did not stop', () => {
    const run = new Scenario(planOf(CHAIN, nodes));
    run.runAll();
    run.finish();
    expect(() => run.when({ type: 'Resume', at: at(1) })).toThrow(
      'run r1 is succeeded; only a stopped run can be resumed (use retry for a failed one)',
    );
  });

  it('reruns only the given task instances in a retry run; the others count as done', () => {
    const run = new Scenario(planOf(CHAIN, nodes), { only: ['b@n2', 'c@n1'] });
    expect(run.dispatch().sort()).toEqual(['b@n2', 'c@n1']);
    run.report('c@n1', 'succeeded');
    run.report('b@n2', 'succeeded');
    expect(run.finish()).toEqual([{ type: 'DeploymentSucceeded', data: { at: at(99), failedNodes: [] } }]);
    expect(run.status('a@n1')).toBe('not_in_run');
  });
});

describe('run - strategy phases (failures tolerated)', () => {
  it('fails the node but does not stop the run, so every other node finishes', () => {
    const run = new Scenario(planOf(CHAIN, nodes), { tolerant: true });
    run.dispatch();
    expect(types(run.report('a@n2', 'failed'))).toEqual(['TaskFailed', 'NodeFailed']);
    run.report('a@n1', 'succeeded');
    expect(run.runAll()).toEqual(['b@n1', 'c@n1']);
    expect(run.finish()).toEqual([{ type: 'DeploymentSucceeded', data: { at: at(99), failedNodes: ['n2'] } }]);
  });

  it('fails offline nodes instead of refusing the run', () => {
    const run = new Scenario(planOf(CHAIN, nodes), { tolerant: true, offline: ['n1'] });
    expect(types(run.events)).toEqual(['DeploymentRequested', 'PlanAccepted', 'NodeFailed']);
    expect(run.dispatch()).toEqual(['a@n2']);
  });
});

describe('summarizeRun', () => {
  it('counts task instances per node and lists failures with their output', () => {
    const run = new Scenario(planOf(GROUPED, fleet));
    throughController(run);
    run.when({
      type: 'RecordProgress',
      message: {
        runId: 'r1',
        key: 'setup@k1',
        node: 'k1',
        attempt: 1,
        dispatchId: 'r1/setup@k1/1',
        status: 'failed',
        at: at(2),
        exitCode: 3,
        outputTail: 'disk full',
      },
    });
    const summary = summarizeRun(run.state, run.events);
    expect(summary.phase).toBe('running');
    expect(summary.nodes.k1).toMatchObject({ failed: 1, dep_failed: 1, failedNode: true });
    expect(summary.nodes.ctl).toMatchObject({ succeeded: 2, dep_failed: 1, failedNode: false });
    expect(summary.failures).toEqual([{ key: 'setup@k1', status: 'failed', outputTail: 'disk full' }]);
    expect(summary.running.sort()).toEqual(['setup@k2', 'setup@k3']);
    expect(summary.totals).toMatchObject({ succeeded: 2, failed: 1, dep_failed: 2, dispatched: 2, pending: 2 });
  });
});

describe('run - choosing among ready tasks', () => {
  it('picks what the simulator picks (the shared readyTaskRank rule): the head of the longest chain first', () => {
    // On hub, `seed` heads a chain of three on worker; `fan`, first in the file, unblocks one task on
    // each of two leaves.
    const yaml = `
- {id: fan, type: shell, roles: [hub], parameters: {cmd: x}}
- {id: seed, type: shell, roles: [hub], parameters: {cmd: x}}
- {id: leaf, type: shell, roles: [leaf], cross-depends: [{name: fan, role: [hub]}], parameters: {cmd: x}}
- {id: step-1, type: shell, roles: [worker], cross-depends: [{name: seed, role: [hub]}], parameters: {cmd: x}}
- {id: step-2, type: shell, roles: [worker], requires: [step-1], parameters: {cmd: x}}
- {id: step-3, type: shell, roles: [worker], requires: [step-2], parameters: {cmd: x}}
`;
    const nodes = [
      { uid: 'h', roles: ['hub'] },
      { uid: 'w', roles: ['worker'] },
      { uid: 'l1', roles: ['leaf'] },
      { uid: 'l2', roles: ['leaf'] },
    ];
    const simulated = simulatePlan(buildPlan({ tasks: assertNoErrors(parseTaskFile(yaml, 'tasks.yaml')), nodes }));
    const run = new Scenario(planOf(yaml, nodes));
    expect(run.dispatch()).toEqual(['seed@h']);
    expect(simulated.timeline.filter((e) => e.node === 'h').map((e) => e.task)).toEqual(['seed', 'fan']);
    run.report('seed@h', 'succeeded');
    expect(run.dispatch().sort()).toEqual(['fan@h', 'step-1@w']);
  });
});

describe('run - check mode (ADR 0031)', () => {
  const checkReport = (run: Scenario, key: string, check: unknown): RunEvent[] => {
    const node = key.split('@')[1];
    return run.when({
      type: 'RecordProgress',
      message: {
        runId: 'r1',
        key,
        node,
        attempt: 1,
        dispatchId: `r1/${key}/1`,
        status: 'succeeded',
        at: at(1),
        check: check as TaskProgressMessage['check'],
      },
    });
  };

  it('a task the agent skipped in a check - TaskSkipped with reason check, and the tasks after it run', () => {
    const run = new Scenario(planOf(CHAIN, nodes), { check: true });
    expect(run.dispatch()).toEqual(['a@n1', 'a@n2']);
    const events = checkReport(run, 'a@n1', { verdict: 'skipped', reason: 'shell task not marked check_safe' });
    expect(events).toEqual([
      {
        type: 'TaskSkipped',
        data: { key: 'a@n1', reason: 'check', at: at(1), detail: 'shell task not marked check_safe' },
      },
    ]);
    expect(run.status('a@n1')).toBe('skipped');
    checkReport(run, 'a@n2', { verdict: 'no_change', reason: 'ok' });
    expect(run.dispatch()).toEqual(['b@n1', 'b@n2']);
  });

  it('a task that ran in a check - TaskSucceeded says whether it would change something, with its diff', () => {
    const run = new Scenario(planOf(CHAIN, nodes), { check: true });
    run.dispatch();
    const [e] = checkReport(run, 'a@n1', {
      verdict: 'would_change',
      reason: 'content differs',
      diff: '-a\n+b\n',
      extra: 1,
    });
    expect(e).toMatchObject({
      type: 'TaskSucceeded',
      data: { check: { verdict: 'would_change', reason: 'content differs', diff: '-a\n+b\n' } },
    });
    expect(Object.keys((e.data as { check: object }).check).sort()).toEqual(['diff', 'reason', 'verdict']);
    expect(summarizeRun(run.state, run.events).check).toBe(true);
  });

  it('a report of a run that is not a check - its check field is ignored, a skip cannot be forged', () => {
    const run = new Scenario(planOf(CHAIN, nodes));
    run.dispatch();
    const [e] = checkReport(run, 'a@n1', { verdict: 'skipped', reason: 'forged' });
    expect(e.type).toBe('TaskSucceeded');
    expect(e.data).not.toHaveProperty('check');
    expect(summarizeRun(run.state, run.events).check).toBeUndefined();
  });
});
