import type { RunEvent } from '@granule/run-events';
import { RunError } from '@granule/run-events';
import { buildPlan, planInstances } from '@granule/planner';
import { assertNoErrors, parseTaskFile } from '@granule/task-model';
import { decide } from './decide';
import type { RunCommand } from './decide';
import { toExecutablePlan } from './executable-plan';
import type { ExecutablePlan, PlanDocument } from './executable-plan';
import { holdsNodeLocks, lockConflicts, nodeLockChanges, nodesToLock } from './node-locks';
import { evolve, initialRunState } from './run-state';
import type { RunState } from './run-state';

const T0 = '2026-01-01T00:00:00.000Z';

const TASKS = `
- id: a
  type: shell
  groups: [controller, compute]
  parameters: { cmd: 'true' }
- id: b
  type: shell
  groups: [compute]
  requires: [a]
  parameters: { cmd: 'true' }
`;

function planOf(): ExecutablePlan {
  const plan = buildPlan({
    tasks: assertNoErrors(parseTaskFile(TASKS, 'deployment_tasks.yaml')),
    nodes: [
      { uid: 'n1', roles: ['controller'] },
      { uid: 'n2', roles: ['compute'] },
      { uid: 'n3', roles: ['compute'] },
    ],
  });
  const doc: PlanDocument = { instances: planInstances(plan), groups: plan.groups, concurrency: plan.concurrency };
  return toExecutablePlan(doc);
}

/** Given/When/Then over decide + evolve, with the lock events the run's events cause. */
class Run {
  state: RunState;
  held = false;
  readonly lockEvents: string[] = [];

  constructor(
    readonly plan: ExecutablePlan,
    request: { waitForLocks?: boolean; dryRun?: boolean; retry?: boolean } = {},
    readonly id = 'r1',
  ) {
    this.state = initialRunState(id);
    this.when({
      type: 'RequestDeployment',
      request: {
        runId: id,
        graph: 'default',
        dryRun: request.dryRun ?? false,
        noop: false,
        ...(request.waitForLocks ? { waitForLocks: true } : {}),
        ...(request.retry ? { retryOf: { runId: 'r0', failedOnly: true } } : {}),
      },
    });
  }

  when(command: RunCommand): RunEvent[] {
    const events = decide(this.state, command, this.plan);
    for (const e of events) this.state = evolve(this.state, e, this.plan);
    const changes = nodeLockChanges(this.state, events, this.held, T0);
    this.held = changes.held;
    this.lockEvents.push(...changes.events.map((e) => `${e.type} ${e.data.uid}`));
    return events;
  }

  accept(holders: Record<string, string> = {}, only?: string[]): RunEvent[] {
    return this.when({
      type: 'AcceptPlan',
      planId: 'p1',
      planHash: 'h',
      offlineNodes: [],
      at: T0,
      holders: new Map(Object.entries(holders)),
      ...(only ? { only } : {}),
    });
  }

  types(events: RunEvent[]): string[] {
    return events.map((e) => e.type);
  }
}

describe('node locks', () => {
  const plan = planOf();

  it('nodesToLock - names the nodes with work, only those of the keys a retry reruns', () => {
    expect(nodesToLock(plan)).toEqual(['n1', 'n2', 'n3']);
    expect(nodesToLock(plan, ['b@n3'])).toEqual(['n3']);
  });

  it('lockConflicts - a node held by the run itself is no conflict', () => {
    expect(
      lockConflicts(
        'r1',
        ['n1', 'n2'],
        new Map([
          ['n1', 'r1'],
          ['n2', 'r9'],
        ]),
      ),
    ).toEqual([{ node: 'n2', runId: 'r9' }]);
  });

  it('given free nodes - the plan is accepted and every node of the run is locked with it', () => {
    const run = new Run(plan);
    expect(run.types(run.accept())).toContain('PlanAccepted');
    expect(run.lockEvents).toEqual(['NodeLocked n1', 'NodeLocked n2', 'NodeLocked n3']);
    expect(holdsNodeLocks(run.state)).toBe(true);
  });

  it('given a node held by another run - the deploy is refused naming the holder and how to wait or stop it', () => {
    const run = new Run(plan);
    const events = run.accept({ n2: 'other-run' });
    expect(run.types(events)).toEqual(['DeploymentRefused']);
    const refused = events[0] as Extract<RunEvent, { type: 'DeploymentRefused' }>;
    expect(refused.data.code).toBe('NODES_LOCKED');
    expect(refused.data.reason).toContain('n2 (run other-run)');
    expect(refused.data.reason).toContain('granule deploy --wait');
    expect(refused.data.reason).toContain('granule stop other-run');
    expect(run.lockEvents).toEqual([]);
  });

  it('a retry refused - says retry --wait', () => {
    const run = new Run(plan, { retry: true });
    const events = run.accept({ n3: 'other-run' }, ['b@n3']);
    expect((events[0] as Extract<RunEvent, { type: 'DeploymentRefused' }>).data.reason).toContain(
      'granule retry --wait',
    );
  });

  it('a retry of keys on free nodes - starts while another run holds the other nodes', () => {
    const run = new Run(plan, { retry: true });
    expect(run.types(run.accept({ n1: 'other-run', n2: 'other-run' }, ['b@n3']))).toContain('PlanAccepted');
    expect(run.lockEvents).toEqual(['NodeLocked n3']);
  });

  it('a dry run - neither checks nor takes locks', () => {
    const run = new Run(plan, { dryRun: true });
    expect(run.types(run.accept({ n1: 'other-run' }))).toEqual(['PlanAccepted', 'DeploymentSucceeded']);
    expect(run.lockEvents).toEqual([]);
  });

  it('with --wait - queued once per set of holders, then starts when the nodes are free', () => {
    const run = new Run(plan, { waitForLocks: true });
    expect(run.types(run.accept({ n1: 'a' }))).toEqual(['DeploymentQueued']);
    expect(run.state.phase).toBe('queued');
    expect(run.state.queued?.plan?.planId).toBe('p1');
    expect(run.accept({ n1: 'a' })).toEqual([]);
    expect(run.types(run.accept({ n1: 'b' }))).toEqual(['DeploymentQueued']);
    expect(run.lockEvents).toEqual([]);
    expect(run.types(run.accept({}))).toContain('PlanAccepted');
    expect(run.state.phase).toBe('running');
    expect(run.lockEvents).toEqual(['NodeLocked n1', 'NodeLocked n2', 'NodeLocked n3']);
  });

  it('a queued run stopped - ends at once and never held a lock', () => {
    const run = new Run(plan, { waitForLocks: true });
    run.accept({ n1: 'a' });
    const stopped = run.when({ type: 'Stop', at: T0 });
    expect(run.types(stopped)).toEqual(['DeploymentStopRequested', 'DeploymentStopped']);
    expect(stopped[1].data).toMatchObject({ beforeStart: true });
    expect(run.lockEvents).toEqual([]);
  });

  it('the end of the run - releases every node, whether it succeeded, failed or stopped', () => {
    const run = new Run(plan);
    run.accept();
    run.when({ type: 'Stop', at: T0 });
    expect(run.lockEvents.slice(3)).toEqual([]);
    expect(holdsNodeLocks(run.state)).toBe(true);
    run.when({ type: 'Finish', at: T0 });
    expect(run.state.phase).toBe('stopped');
    expect(run.lockEvents.slice(3)).toEqual(['NodeReleased n1', 'NodeReleased n2', 'NodeReleased n3']);
    expect(holdsNodeLocks(run.state)).toBe(false);
  });

  it('resume of a stopped run - takes its nodes again, refused when another run holds one', () => {
    const run = new Run(plan);
    run.accept();
    run.when({ type: 'Stop', at: T0 });
    run.when({ type: 'Finish', at: T0 });
    expect(() => run.when({ type: 'Resume', at: T0, holders: new Map([['n2', 'r2']]) })).toThrow(
      expect.objectContaining({ code: 'NODES_LOCKED', message: expect.stringContaining('granule resume --wait') }),
    );
    expect(run.types(run.when({ type: 'Resume', at: T0, holders: new Map() }))).toEqual(['DeploymentResumed']);
    expect(run.lockEvents.slice(6)).toEqual(['NodeLocked n1', 'NodeLocked n2', 'NodeLocked n3']);
  });

  it('resume --wait - queued, and resumes once the holder let go', () => {
    const run = new Run(plan);
    run.accept();
    run.when({ type: 'Stop', at: T0 });
    run.when({ type: 'Finish', at: T0 });
    const held = new Map([['n2', 'r2']]);
    expect(run.types(run.when({ type: 'Resume', at: T0, holders: held, wait: true, requestedBy: 'alice' }))).toEqual([
      'DeploymentQueued',
    ]);
    expect(run.state.queued).toMatchObject({ resume: true, requestedBy: 'alice' });
    // The tick asks again (without the operator's --wait, with who asked): still queued, nothing new recorded.
    expect(run.when({ type: 'Resume', at: T0, holders: held, requestedBy: 'alice' })).toEqual([]);
    expect(run.when({ type: 'Resume', at: T0, holders: new Map(), requestedBy: 'alice' })).toEqual([
      { type: 'DeploymentResumed', data: { at: T0, requestedBy: 'alice' } },
    ]);
    expect(run.state.phase).toBe('running');
  });

  it('resume of a stopping run - needs no lock check (it never let go)', () => {
    const run = new Run(plan);
    run.accept();
    run.when({ type: 'Stop', at: T0 });
    expect(run.types(run.when({ type: 'Resume', at: T0, holders: new Map([['n1', 'r2']]) }))).toEqual([
      'DeploymentResumed',
    ]);
    expect(run.lockEvents).toHaveLength(3);
  });

  it('refusals are RunErrors with a stable code', () => {
    const run = new Run(plan);
    run.accept();
    run.when({ type: 'Stop', at: T0 });
    run.when({ type: 'Finish', at: T0 });
    try {
      run.when({ type: 'Resume', at: T0, holders: new Map([['n1', 'r2']]) });
      throw new Error('not refused');
    } catch (err) {
      expect(err).toBeInstanceOf(RunError);
    }
  });
});
