import { foldWith } from '@granule/core';
import { planStrategy } from '@granule/deployment-strategy';
import type { DeploymentGroup, DeploymentStrategy, StrategyPlan } from '@granule/deployment-strategy';
import { RunError } from '@granule/run-events';
import type { RunEvent } from '@granule/run-events';
import {
  foldStrategyRun,
  phaseRunOutcome,
  strategyRunDecider,
  type PhaseRunOutcome,
  type StrategyRunCommand,
} from './strategy-run.decider';

const AT = '2026-01-01T00:00:00.000Z';

function group(name: string, tags: string[], extra: Partial<DeploymentGroup> = {}): DeploymentGroup {
  return {
    name,
    critical: true,
    dependsOn: [],
    selectors: [{ nodeNames: [], nodeTags: tags, nodeLabels: [], rackNames: [] }],
    ...extra,
  };
}

/** Two groups: web (non-critical, needs one success), then db (critical), one node each. */
function twoGroups(): StrategyPlan {
  const strategy: DeploymentStrategy = {
    name: 's',
    groups: [
      group('web', ['web'], { critical: false, successCriteria: { minimumSuccessfulNodes: 1 } }),
      group('db', ['db'], { successCriteria: { minimumSuccessfulNodes: 1 } }),
    ],
  };
  return planStrategy(strategy, [
    { uid: 'w1', roles: [], tags: ['web'] },
    { uid: 'd1', roles: [], tags: ['db'] },
  ]);
}

/** Given/When/Then over the decider (emmett's DeciderSpecification): events in, command, events out. */
class Spec {
  private history: RunEvent[] = [];
  given(...events: RunEvent[]): this {
    this.history.push(...events);
    return this;
  }
  when(command: StrategyRunCommand): RunEvent[] {
    const state = foldWith(strategyRunDecider, 's1', this.history, undefined);
    const events = strategyRunDecider.decide(state, command, undefined);
    this.history.push(...events);
    return events;
  }
  get events(): RunEvent[] {
    return this.history;
  }
}

const requested: RunEvent = {
  type: 'DeploymentRequested',
  data: { runId: 's1', graph: 'default', dryRun: false, noop: false, strategy: { name: 's' } },
};
const succeeded = (failedNodes: string[] = []): PhaseRunOutcome => ({ end: 'succeeded', failedNodes });
const types = (events: RunEvent[]): string[] => events.map((e) => e.type);

function accepted(): Spec {
  const spec = new Spec().given(requested);
  spec.when({ type: 'AcceptStrategy', plan: twoGroups() });
  return spec;
}

describe('strategy-run decider', () => {
  it('accept then advance - starts the first group prepare phase as a run named after the step', () => {
    const spec = accepted();
    expect(spec.when({ type: 'Advance', at: AT })).toEqual([
      {
        type: 'StrategyPhaseStarted',
        data: { group: 'web', phase: 'prepare', nodes: ['w1'], childRunId: 's1-1-prepare', graph: 'provisioning' },
      },
    ]);
  });

  it('advance while a phase runs decides nothing', () => {
    const spec = accepted();
    spec.when({ type: 'Advance', at: AT });
    expect(spec.when({ type: 'Advance', at: AT })).toEqual([]);
  });

  it('a phase end records the result and starts the next phase in the same decision', () => {
    const spec = accepted();
    spec.when({ type: 'Advance', at: AT });
    const events = spec.when({ type: 'RecordPhaseEnd', childRunId: 's1-1-prepare', outcome: succeeded(), at: AT });
    expect(events).toEqual([
      {
        type: 'StrategyPhaseFinished',
        data: { group: 'web', phase: 'prepare', childRunId: 's1-1-prepare', succeeded: ['w1'], failed: [] },
      },
      {
        type: 'StrategyPhaseStarted',
        data: { group: 'web', phase: 'deploy', nodes: ['w1'], childRunId: 's1-2-deploy', graph: 'default' },
      },
    ]);
  });

  it('an end reported for another phase run changes nothing', () => {
    const spec = accepted();
    spec.when({ type: 'Advance', at: AT });
    expect(spec.when({ type: 'RecordPhaseEnd', childRunId: 's1-9-deploy', outcome: succeeded(), at: AT })).toEqual([]);
  });

  it('the last phase ends the run with the report: a failed non-critical group is a partial success', () => {
    const spec = accepted();
    spec.when({ type: 'Advance', at: AT });
    spec.when({ type: 'RecordPhaseEnd', childRunId: 's1-1-prepare', outcome: succeeded(), at: AT });
    spec.when({
      type: 'RecordPhaseEnd',
      childRunId: 's1-2-deploy',
      outcome: { end: 'failed', failedNodes: ['w1'] },
      at: AT,
    });
    spec.when({ type: 'RecordPhaseEnd', childRunId: 's1-3-prepare', outcome: succeeded(), at: AT });
    const end = spec.when({ type: 'RecordPhaseEnd', childRunId: 's1-4-deploy', outcome: succeeded(), at: AT });
    expect(types(end)).toEqual(['StrategyPhaseFinished', 'StrategyReported', 'DeploymentSucceeded']);
    expect(end[2]).toEqual({ type: 'DeploymentSucceeded', data: { at: AT, failedNodes: ['w1'], outcome: 'partial' } });
    expect(strategyRunDecider.isEnded(foldStrategyRun('s1', spec.events))).toBe(true);
  });

  it('a critical group that fails ends the run failed, naming the group', () => {
    const spec = accepted();
    spec.when({ type: 'Advance', at: AT });
    spec.when({ type: 'RecordPhaseEnd', childRunId: 's1-1-prepare', outcome: succeeded(), at: AT });
    spec.when({ type: 'RecordPhaseEnd', childRunId: 's1-2-deploy', outcome: succeeded(), at: AT });
    const end = spec.when({
      type: 'RecordPhaseEnd',
      childRunId: 's1-3-prepare',
      outcome: { end: 'refused', failedNodes: [], refusalCode: 'PLANNING_FAILED', reason: 'no planner' },
      at: AT,
    });
    expect(end[0]).toMatchObject({ type: 'StrategyPhaseFinished', data: { failed: ['d1'], note: 'no planner' } });
    expect(end.at(-1)).toEqual({
      type: 'DeploymentFailed',
      data: { at: AT, reason: 'critical group(s) failed: db', failedNodes: ['d1'] },
    });
  });

  it('a prepare phase refused for want of a provisioning graph counts as done (nothing to prepare)', () => {
    const spec = accepted();
    spec.when({ type: 'Advance', at: AT });
    const events = spec.when({
      type: 'RecordPhaseEnd',
      childRunId: 's1-1-prepare',
      outcome: { end: 'refused', failedNodes: [], refusalCode: 'PLAN_UNKNOWN_GRAPH', reason: 'no graph provisioning' },
      at: AT,
    });
    expect(events[0]).toMatchObject({ type: 'StrategyPhaseFinished', data: { succeeded: ['w1'], failed: [] } });
  });

  it('stop while a phase runs asks for the stop and waits for the phase run; its stopped end ends the run with the phase pending', () => {
    const spec = accepted();
    spec.when({ type: 'Advance', at: AT });
    expect(spec.when({ type: 'Stop', at: AT, detail: 'stopped by the operator' })).toEqual([
      { type: 'DeploymentStopRequested', data: { reason: 'operator', detail: 'stopped by the operator' } },
    ]);
    expect(spec.when({ type: 'Advance', at: AT })).toEqual([]);
    expect(
      spec.when({
        type: 'RecordPhaseEnd',
        childRunId: 's1-1-prepare',
        outcome: { end: 'stopped', failedNodes: [] },
        at: AT,
      }),
    ).toEqual([{ type: 'DeploymentStopped', data: { at: AT, failedNodes: [] } }]);
    expect(foldStrategyRun('s1', spec.events).pending?.childRunId).toBe('s1-1-prepare');
  });

  it('a phase run stopped by the operator stops the strategy run too', () => {
    const spec = accepted();
    spec.when({ type: 'Advance', at: AT });
    expect(
      spec.when({
        type: 'RecordPhaseEnd',
        childRunId: 's1-1-prepare',
        outcome: { end: 'stopped', failedNodes: [] },
        at: AT,
      }),
    ).toEqual([
      { type: 'DeploymentStopRequested', data: { reason: 'operator', detail: 'phase run s1-1-prepare was stopped' } },
      { type: 'DeploymentStopped', data: { at: AT, failedNodes: [] } },
    ]);
  });

  it('a phase recorded as started but never created: a stop ends the run, keeping the phase for a resume', () => {
    const spec = accepted();
    spec.when({ type: 'Advance', at: AT });
    spec.when({ type: 'Stop', at: AT, detail: 'stopped by the operator' });
    expect(
      spec.when({
        type: 'RecordPhaseEnd',
        childRunId: 's1-1-prepare',
        outcome: { end: 'absent', failedNodes: [] },
        at: AT,
      }),
    ).toEqual([{ type: 'DeploymentStopped', data: { at: AT, failedNodes: [] } }]);
  });

  it('resume goes on: with no phase pending, the next phase starts in the same decision', () => {
    const spec = accepted();
    spec.when({ type: 'Advance', at: AT });
    spec.when({ type: 'Stop', at: AT, detail: 'x' });
    spec.when({ type: 'RecordPhaseEnd', childRunId: 's1-1-prepare', outcome: succeeded(), at: AT });
    expect(types(spec.events).slice(-2)).toEqual(['StrategyPhaseFinished', 'DeploymentStopped']);
    expect(foldStrategyRun('s1', spec.events).stopReason).toBe('x');
    expect(types(spec.when({ type: 'Resume', at: AT }))).toEqual(['DeploymentResumed', 'StrategyPhaseStarted']);
    expect(foldStrategyRun('s1', spec.events).stopReason).toBeUndefined();
  });

  it('a strategy run stopped longer ago than the resume window is not resumed', () => {
    const spec = accepted();
    spec.when({ type: 'Advance', at: AT });
    spec.when({ type: 'Stop', at: AT, detail: 'x' });
    spec.when({ type: 'RecordPhaseEnd', childRunId: 's1-1-prepare', outcome: succeeded(), at: AT });
    const stoppedAt = foldStrategyRun('s1', spec.events).stoppedAt as string;
    const late = new Date(Date.parse(stoppedAt) + 30 * 86_400_000 + 1000).toISOString();
    let refusal: unknown;
    try {
      spec.when({ type: 'Resume', at: late });
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(RunError);
    expect(refusal).toMatchObject({
      code: 'RUN_RESUME_WINDOW_CLOSED',
      message: `run s1 was stopped at ${stoppedAt} and could be resumed until ${new Date(Date.parse(stoppedAt) + 30 * 86_400_000).toISOString()} (30 days): its plan is stale and its packages may be gone; start a new deployment`,
    });
    // The window runs from the earlier of its stop and its phase run's: a phase run that stopped a
    // minute before its strategy refuses a minute sooner, and so does the strategy run.
    const phaseStoppedAt = new Date(Date.parse(stoppedAt) - 60_000).toISOString();
    const edge = new Date(Date.parse(stoppedAt) + 30 * 86_400_000 - 30_000).toISOString();
    expect(() => spec.when({ type: 'Resume', at: edge, phaseStoppedAt })).toThrow(
      `run s1 was stopped at ${phaseStoppedAt} and could be resumed until`,
    );
    expect(types(spec.when({ type: 'Resume', at: stoppedAt }))).toEqual(['DeploymentResumed', 'StrategyPhaseStarted']);
  });

  it('records who stopped and who resumed the strategy run', () => {
    const spec = accepted();
    spec.when({ type: 'Advance', at: AT });
    expect(spec.when({ type: 'Stop', at: AT, detail: 'stopped by the operator', requestedBy: 'alice' })).toEqual([
      {
        type: 'DeploymentStopRequested',
        data: { reason: 'operator', detail: 'stopped by the operator', requestedBy: 'alice' },
      },
    ]);
    spec.when({ type: 'RecordPhaseEnd', childRunId: 's1-1-prepare', outcome: succeeded(), at: AT });
    expect(spec.when({ type: 'Resume', at: AT, requestedBy: 'bob' })[0]).toEqual({
      type: 'DeploymentResumed',
      data: { at: AT, requestedBy: 'bob' },
    });
  });

  it('a run stopped before its strategy was accepted ends at once and cannot be resumed', () => {
    const spec = new Spec().given(requested);
    expect(types(spec.when({ type: 'Stop', at: AT, detail: 'x' }))).toEqual([
      'DeploymentStopRequested',
      'DeploymentStopped',
    ]);
    expect(() => spec.when({ type: 'Resume', at: AT })).toThrow(RunError);
    expect(() => spec.when({ type: 'Resume', at: AT })).toThrow('was stopped before its strategy was accepted');
  });

  it('stop of an ended run says it ended; resume of a running one decides nothing; a second request is refused', () => {
    const spec = new Spec().given(requested);
    spec.when({ type: 'RefuseStrategy', code: 'STRATEGY_UNRESOLVED', reason: 'no such strategy' });
    expect(() => spec.when({ type: 'Stop', at: AT, detail: 'x' })).toThrow('run s1 has already ended (refused)');
    expect(() => spec.when({ type: 'RequestStrategyRun', request: requested.data as never })).toThrow(
      'run s1 already exists',
    );
    const running = accepted();
    expect(running.when({ type: 'Resume', at: AT })).toEqual([]);
  });

  it('folding the recorded events gives the state the decisions were made on (one fold for driver, recovery and queries)', () => {
    const spec = accepted();
    spec.when({ type: 'Advance', at: AT });
    spec.when({ type: 'RecordPhaseEnd', childRunId: 's1-1-prepare', outcome: succeeded(), at: AT });
    const folded = foldStrategyRun('s1', spec.events);
    expect(folded.phaseRuns).toEqual(['s1-1-prepare', 's1-2-deploy']);
    expect(folded.pending).toEqual({
      action: { kind: 'deploy', group: 'web', nodes: ['w1'] },
      childRunId: 's1-2-deploy',
    });
    expect(folded.groups?.nodes).toEqual({ w1: 'prepared', d1: 'not_started' });
  });
});

describe('phaseRunOutcome', () => {
  it('reads how a phase run ended from its events, and nothing while it runs', () => {
    const req: RunEvent = {
      type: 'DeploymentRequested',
      data: { runId: 'c', graph: 'default', dryRun: false, noop: false },
    };
    expect(phaseRunOutcome([])).toEqual({ end: 'absent', failedNodes: [] });
    expect(phaseRunOutcome([req])).toBeUndefined();
    expect(
      phaseRunOutcome([
        req,
        { type: 'NodeFailed', data: { node: 'n2', reason: 'task_failed' } },
        { type: 'DeploymentSucceeded', data: { at: AT, failedNodes: ['n2'] } },
      ]),
    ).toEqual({ end: 'succeeded', failedNodes: ['n2'] });
    expect(phaseRunOutcome([req, { type: 'DeploymentRefused', data: { code: 'X', reason: 'why' } }])).toEqual({
      end: 'refused',
      failedNodes: [],
      refusalCode: 'X',
      reason: 'why',
    });
  });
});
