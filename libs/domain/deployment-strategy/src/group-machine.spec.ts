import { seedExample, testGroup, testNodes } from './__fixtures__/seed-fixture';
import { evaluateCriteria } from './success-criteria';
import { StrategyRunError } from './strategy.errors';
import { planStrategy } from './strategy-plan';
import { buildReport, formatProcessingLog } from './strategy-report';
import { applyResult, createGroupMachine, nextAction, type PhaseResult, type GroupMachineState } from './group-machine';
import { simulateStrategy } from './strategy-simulator';
import type { DeploymentStrategy } from './strategy.types';

/** The shape the CLI prints: outcome, group status and failures, node statuses. */
const summary = (state: GroupMachineState) => ({
  outcome: state.outcome,
  groups: Object.fromEntries(state.groups.map((g) => [g.name, { status: g.status, failures: g.failures }])),
  nodes: state.nodes,
});

const allDeployed = (uids: string[]) => Object.fromEntries(uids.map((u) => [u, 'deployed']));

describe('seed example processing', () => {
  const { strategy, nodes } = seedExample();
  const uids = nodes.map((n) => n.uid);

  it('everything succeeds - every group DEPLOYED, outcome success, one prepare and one deploy per group in plan order', () => {
    const state = simulateStrategy(strategy, nodes);
    expect(summary(state)).toEqual({
      outcome: 'success',
      groups: {
        'monitoring-nodes': { status: 'DEPLOYED', failures: [] },
        'ntp-node': { status: 'DEPLOYED', failures: [] },
        'control-nodes': { status: 'DEPLOYED', failures: [] },
        'compute-nodes-1': { status: 'DEPLOYED', failures: [] },
        'compute-nodes-2': { status: 'DEPLOYED', failures: [] },
      },
      nodes: allDeployed(uids),
    });
    expect(state.steps.map((s) => `${s.phase} ${s.group} ${s.nodes.join(',')}`)).toEqual([
      'prepare monitoring-nodes mon01,mon02',
      'deploy monitoring-nodes mon01,mon02',
      'prepare ntp-node ntp01',
      'deploy ntp-node ntp01',
      'prepare control-nodes ctl01,ctl02,ctl03,ctl04',
      'deploy control-nodes ctl01,ctl02,ctl03,ctl04',
      'prepare compute-nodes-1 cmp101,cmp102',
      'deploy compute-nodes-1 cmp101,cmp102',
      'prepare compute-nodes-2 cmp201,cmp202',
      'deploy compute-nodes-2 cmp201,cmp202',
    ]);
  });

  it('ntp-node prepare fails - its dependents fail by dependency, monitoring still deploys, outcome failed', () => {
    const state = simulateStrategy(strategy, nodes, { failPrepare: ['ntp01'] });
    expect(summary(state)).toEqual({
      outcome: 'failed',
      groups: {
        'monitoring-nodes': { status: 'DEPLOYED', failures: [] },
        'ntp-node': { status: 'FAILED', failures: [{ criteria: 'minimum_successful_nodes', needed: 1, actual: 0 }] },
        'control-nodes': {
          status: 'FAILED',
          failures: [{ criteria: 'depends_on', needed: 'ntp-node', actual: 'FAILED' }],
        },
        'compute-nodes-1': {
          status: 'FAILED',
          failures: [{ criteria: 'depends_on', needed: 'control-nodes', actual: 'FAILED' }],
        },
        'compute-nodes-2': {
          status: 'FAILED',
          failures: [{ criteria: 'depends_on', needed: 'control-nodes', actual: 'FAILED' }],
        },
      },
      nodes: {
        ntp01: 'failed',
        ctl01: 'not_started',
        ctl02: 'not_started',
        ctl03: 'not_started',
        ctl04: 'not_started',
        cmp101: 'not_started',
        cmp102: 'not_started',
        cmp201: 'not_started',
        cmp202: 'not_started',
        mon01: 'deployed',
        mon02: 'deployed',
      },
    });
    expect(formatProcessingLog(buildReport(state))).toBe(
      [
        'Start',
        '| prepare monitoring-nodes  <SUCCESS>',
        '| deploy monitoring-nodes   <SUCCESS>',
        'V',
        '| prepare ntp-node          <FAILED>',
        '| deploy ntp-node           <FAILED, due to prepare failure>',
        'V',
        '| prepare control-nodes     <FAILED, due to dependency>',
        '| deploy control-nodes      <FAILED, due to dependency>',
        'V',
        '| prepare compute-nodes-1   <FAILED, due to dependency>',
        '| deploy compute-nodes-1    <FAILED, due to dependency>',
        'V',
        '| prepare compute-nodes-2   <FAILED, due to dependency>',
        '| deploy compute-nodes-2    <FAILED, due to dependency>',
        'Finish (failed due to critical group failed)',
        '',
      ].join('\n'),
    );
  });

  it('compute-nodes-2 deploy fails - only that group fails, outcome partial', () => {
    const state = simulateStrategy(strategy, nodes, { failDeploy: ['cmp201', 'cmp202'] });
    expect(summary(state)).toEqual({
      outcome: 'partial',
      groups: {
        'monitoring-nodes': { status: 'DEPLOYED', failures: [] },
        'ntp-node': { status: 'DEPLOYED', failures: [] },
        'control-nodes': { status: 'DEPLOYED', failures: [] },
        'compute-nodes-1': { status: 'DEPLOYED', failures: [] },
        'compute-nodes-2': {
          status: 'FAILED',
          failures: [{ criteria: 'percent_successful_nodes', needed: 50, actual: 0 }],
        },
      },
      nodes: { ...allDeployed(uids), cmp201: 'failed', cmp202: 'failed' },
    });
    expect(buildReport(state).groups.find((g) => g.name === 'compute-nodes-2')).toEqual({
      name: 'compute-nodes-2',
      critical: false,
      status: 'FAILED',
      stage: 'deploy',
      nodes: 2,
      failures: [{ criteria: 'percent_successful_nodes', needed: 50, actual: 0 }],
    });
  });

  it('one control node failing prepare - 75% misses 90% although maximum_failed_nodes 1 allows it; the failed node is not deployed', () => {
    const state = simulateStrategy(strategy, nodes, { failPrepare: ['ctl02'] });
    expect(state.groups.find((g) => g.name === 'control-nodes')).toMatchObject({
      status: 'FAILED',
      stage: 'prepare',
      failures: [{ criteria: 'percent_successful_nodes', needed: 90, actual: 75 }],
    });
    expect(state.outcome).toBe('failed');
    // Prepared nodes of a group that failed after prepare stay prepared; nothing deploys them.
    expect(buildReport(state).nodes).toEqual({
      deployed: ['ntp01', 'mon01', 'mon02'],
      prepared: ['ctl01', 'ctl03', 'ctl04'],
      failed: ['ctl02'],
      not_started: ['cmp101', 'cmp102', 'cmp201', 'cmp202'],
    });
  });

  it('one compute node of a 50% group failing deploy - the group passes, the run is partial', () => {
    const state = simulateStrategy(strategy, nodes, { failDeploy: ['cmp101'] });
    expect(state.groups.find((g) => g.name === 'compute-nodes-1')?.status).toBe('DEPLOYED');
    expect(state.nodes.cmp101).toBe('failed');
    expect(state.outcome).toBe('partial');
  });

  it('a node failing prepare is left out of the deploy action', () => {
    let state = createGroupMachine(planStrategy(strategy, nodes));
    const seen: string[] = [];
    for (let action = nextAction(state); action.kind !== 'done'; action = nextAction(state)) {
      seen.push(`${action.kind} ${action.group} ${action.nodes.join(',')}`);
      const failed: string[] = action.kind === 'prepare' ? action.nodes.filter((u) => u === 'cmp102') : [];
      state = applyResult(state, {
        group: action.group,
        phase: action.kind,
        succeeded: action.nodes.filter((u) => !failed.includes(u)),
        failed,
      });
    }
    expect(seen).toContain('deploy compute-nodes-1 cmp101');
    expect(state.outcome).toBe('partial');
  });
});

describe('group machine rules', () => {
  it('non-critical parent failing - its critical child fails by dependency and the run fails', () => {
    const strategy: DeploymentStrategy = {
      groups: [
        testGroup('parent', { critical: false, tags: ['p'], successCriteria: { minimumSuccessfulNodes: 1 } }),
        testGroup('child', { tags: ['c'], dependsOn: ['parent'] }),
      ],
    };
    const state = simulateStrategy(strategy, testNodes({ p1: ['p'], c1: ['c'] }), { failDeploy: ['p1'] });
    expect(summary(state)).toEqual({
      outcome: 'failed',
      groups: {
        parent: { status: 'FAILED', failures: [{ criteria: 'minimum_successful_nodes', needed: 1, actual: 0 }] },
        child: { status: 'FAILED', failures: [{ criteria: 'depends_on', needed: 'parent', actual: 'FAILED' }] },
      },
      nodes: { p1: 'failed', c1: 'not_started' },
    });
    expect(state.groups.map((g) => g.stage)).toEqual(['deploy', 'none']);
  });

  it('names every failed dependency of a group', () => {
    const strategy: DeploymentStrategy = {
      groups: [
        testGroup('a', { tags: ['a'], successCriteria: { minimumSuccessfulNodes: 1 } }),
        testGroup('b', { tags: ['b'], successCriteria: { minimumSuccessfulNodes: 1 } }),
        testGroup('c', { tags: ['c'], dependsOn: ['a', 'b'] }),
      ],
    };
    const state = simulateStrategy(strategy, testNodes({ a1: ['a'], b1: ['b'], c1: ['c'] }), {
      failPrepare: ['a1', 'b1'],
    });
    expect(state.groups[2].failures).toEqual([
      { criteria: 'depends_on', needed: 'a', actual: 'FAILED' },
      { criteria: 'depends_on', needed: 'b', actual: 'FAILED' },
    ]);
  });

  it('zero-node group - counts as 100% successful without an action, but fails minimum_successful_nodes', () => {
    const strategy: DeploymentStrategy = {
      groups: [
        testGroup('empty-percent', {
          tags: ['none'],
          successCriteria: { percentSuccessfulNodes: 100, maximumFailedNodes: 0 },
        }),
        testGroup('empty-minimum', { tags: ['none'], critical: false, successCriteria: { minimumSuccessfulNodes: 1 } }),
        testGroup('real', { tags: ['x'], dependsOn: ['empty-percent'] }),
      ],
    };
    const run = createGroupMachine(planStrategy(strategy, testNodes({ x1: ['x'] })));
    expect(nextAction(run)).toEqual({ kind: 'prepare', group: 'real', nodes: ['x1'] });
    expect(run.groups.map((g) => [g.name, g.status, g.failures])).toEqual([
      ['empty-percent', 'DEPLOYED', []],
      ['empty-minimum', 'FAILED', [{ criteria: 'minimum_successful_nodes', needed: 1, actual: 0 }]],
      ['real', 'NOT_STARTED', []],
    ]);
    expect(run.steps.map((s) => `${s.phase} ${s.group} [${s.nodes.join(',')}]`)).toEqual([
      'prepare empty-percent []',
      'deploy empty-percent []',
      'prepare empty-minimum []',
    ]);
  });

  it('overlap - a node handled by an earlier group is not re-run but counts in the later group', () => {
    const strategy: DeploymentStrategy = {
      groups: [
        testGroup('first', { tags: ['x'], critical: false }),
        testGroup('second', { tags: ['y'], critical: false, successCriteria: { minimumSuccessfulNodes: 2 } }),
      ],
    };
    const nodes = testNodes({ a: ['x'], b: ['x', 'y'], c: ['y'] });
    const ok = simulateStrategy(strategy, nodes);
    expect(ok.steps.filter((s) => s.group === 'second').map((s) => s.nodes)).toEqual([['c'], ['c']]);
    expect(ok.groups[1].status).toBe('DEPLOYED');

    // b failed in `first`: `second` does not retry it and misses its minimum of 2 right after prepare.
    const bFails = simulateStrategy(strategy, nodes, { failDeploy: ['b'] });
    expect(bFails.steps.filter((s) => s.group === 'second').map((s) => s.nodes)).toEqual([['c']]);
    expect(bFails.groups[1]).toMatchObject({
      status: 'FAILED',
      stage: 'prepare',
      failures: [{ criteria: 'minimum_successful_nodes', needed: 2, actual: 1 }],
    });
    expect(bFails.nodes).toEqual({ a: 'deployed', b: 'failed', c: 'prepared' });
    expect(bFails.outcome).toBe('partial');
  });

  it('overlap - a node whose first group never ran is prepared by the next group that selects it', () => {
    const strategy: DeploymentStrategy = {
      groups: [
        testGroup('gate', { tags: ['g'], critical: false, successCriteria: { minimumSuccessfulNodes: 1 } }),
        testGroup('open', { tags: ['o'], critical: false }),
        testGroup('first', { tags: ['x'], critical: false, dependsOn: ['gate'] }),
        testGroup('second', { tags: ['y'], critical: false, dependsOn: ['open'] }),
      ],
    };
    const nodes = testNodes({ g1: ['g'], o1: ['o'], b: ['x', 'y'] });
    expect(planStrategy(strategy, nodes).groups.map((g) => [g.name, g.actionable])).toEqual([
      ['gate', ['g1']],
      ['open', ['o1']],
      ['first', ['b']],
      ['second', []],
    ]);
    const state = simulateStrategy(strategy, nodes, { failPrepare: ['g1'] });
    expect(state.steps.map((s) => `${s.phase} ${s.group} ${s.nodes.join(',')}`)).toEqual([
      'prepare gate g1',
      'prepare open o1',
      'deploy open o1',
      'prepare second b',
      'deploy second b',
    ]);
    expect(state.nodes).toEqual({ g1: 'failed', o1: 'deployed', b: 'deployed' });
    expect(state.groups.map((g) => g.status)).toEqual(['FAILED', 'DEPLOYED', 'FAILED', 'DEPLOYED']);
  });

  it('percent boundary - 3 of 4 meets 75 and misses 76', () => {
    const nodes = testNodes({ n1: ['x'], n2: ['x'], n3: ['x'], n4: ['x'] });
    const run = (percent: number) =>
      simulateStrategy(
        { groups: [testGroup('g', { tags: ['x'], successCriteria: { percentSuccessfulNodes: percent } })] },
        nodes,
        { failPrepare: ['n4'] },
      );
    expect(run(75).groups[0]).toMatchObject({ status: 'DEPLOYED', failures: [] });
    expect(run(75).outcome).toBe('partial');
    expect(run(76).groups[0]).toMatchObject({
      status: 'FAILED',
      stage: 'prepare',
      failures: [{ criteria: 'percent_successful_nodes', needed: 76, actual: 75 }],
    });
    expect(run(76).outcome).toBe('failed');
  });

  it('no criteria - the group succeeds even when every node fails', () => {
    const state = simulateStrategy(
      { groups: [testGroup('g', { critical: false, tags: ['x'] })] },
      testNodes({ n1: ['x'] }),
      { failDeploy: ['n1'] },
    );
    expect(state.groups[0].status).toBe('DEPLOYED');
    expect(state.outcome).toBe('partial');
  });

  it('a critical group failing does not stop independent groups', () => {
    const strategy: DeploymentStrategy = {
      groups: [
        testGroup('crit', { tags: ['a'], successCriteria: { maximumFailedNodes: 0 } }),
        testGroup('free', { critical: false, tags: ['b'] }),
      ],
    };
    const state = simulateStrategy(strategy, testNodes({ a1: ['a'], b1: ['b'] }), { failPrepare: ['a1'] });
    expect(summary(state).groups).toEqual({
      crit: { status: 'FAILED', failures: [{ criteria: 'maximum_failed_nodes', needed: 0, actual: 1 }] },
      free: { status: 'DEPLOYED', failures: [] },
    });
    expect(state.outcome).toBe('failed');
  });

  it('a node absent from a result counts as failed (e.g. timed out)', () => {
    let state = createGroupMachine(
      planStrategy({ groups: [testGroup('g', { tags: ['x'], critical: false })] }, testNodes({ a: ['x'], b: ['x'] })),
    );
    state = applyResult(state, { group: 'g', phase: 'prepare', succeeded: ['a'], failed: [] });
    expect(state.nodes).toEqual({ a: 'prepared', b: 'failed' });
    expect(nextAction(state)).toEqual({ kind: 'deploy', group: 'g', nodes: ['a'] });
  });
});

describe('group machine state', () => {
  const { strategy, nodes } = seedExample();
  const plan = planStrategy(strategy, nodes);

  it('is not changed by applyResult and survives a JSON round trip', () => {
    const start = createGroupMachine(plan);
    const frozen = JSON.stringify(start);
    const next = applyResult(JSON.parse(frozen) as GroupMachineState, {
      group: 'monitoring-nodes',
      phase: 'prepare',
      succeeded: ['mon01', 'mon02'],
      failed: [],
    });
    expect(JSON.stringify(start)).toBe(frozen);
    expect(nextAction(start)).toEqual({ kind: 'prepare', group: 'monitoring-nodes', nodes: ['mon01', 'mon02'] });
    expect(nextAction(next)).toEqual({ kind: 'deploy', group: 'monitoring-nodes', nodes: ['mon01', 'mon02'] });
    expect(next.groups[0].name).toBe('monitoring-nodes');
    expect(next.groups[0].status).toBe('PREPARED');
  });

  it('rejects results that do not answer the pending action', () => {
    const start = createGroupMachine(plan);
    const attempt = (result: PhaseResult): string => {
      try {
        applyResult(start, result);
        return 'accepted';
      } catch (err) {
        return err instanceof StrategyRunError ? `${err.code}: ${err.message}` : String(err);
      }
    };
    expect(attempt({ group: 'control-nodes', phase: 'prepare', succeeded: [], failed: [] })).toBe(
      "STRATEGY_UNEXPECTED_RESULT: expected a prepare result for group 'monitoring-nodes', got a prepare result for group 'control-nodes'",
    );
    expect(attempt({ group: 'monitoring-nodes', phase: 'deploy', succeeded: [], failed: [] })).toBe(
      "STRATEGY_UNEXPECTED_RESULT: expected a prepare result for group 'monitoring-nodes', got a deploy result for group 'monitoring-nodes'",
    );
    expect(attempt({ group: 'monitoring-nodes', phase: 'prepare', succeeded: ['mon01', 'ctl01'], failed: [] })).toBe(
      "STRATEGY_UNEXPECTED_RESULT: node(s) ctl01 were not part of the prepare of group 'monitoring-nodes'",
    );
    expect(attempt({ group: 'monitoring-nodes', phase: 'prepare', succeeded: ['mon01'], failed: ['mon01'] })).toBe(
      'STRATEGY_UNEXPECTED_RESULT: node(s) mon01 reported both succeeded and failed',
    );
    const done = simulateStrategy(strategy, nodes);
    expect(() => applyResult(done, { group: 'ntp-node', phase: 'prepare', succeeded: [], failed: [] })).toThrow(
      "the run is finished; no prepare result for group 'ntp-node' is expected",
    );
  });
});

describe('evaluateCriteria', () => {
  it('checks each criterion separately and reports each failure', () => {
    expect(
      evaluateCriteria(
        { percentSuccessfulNodes: 90, minimumSuccessfulNodes: 3, maximumFailedNodes: 1 },
        { total: 4, succeeded: 2, failed: 2 },
      ),
    ).toEqual([
      { criteria: 'percent_successful_nodes', needed: 90, actual: 50 },
      { criteria: 'minimum_successful_nodes', needed: 3, actual: 2 },
      { criteria: 'maximum_failed_nodes', needed: 1, actual: 2 },
    ]);
  });

  it('rounds the reported percentage to 2 decimals but checks exactly', () => {
    expect(evaluateCriteria({ percentSuccessfulNodes: 67 }, { total: 3, succeeded: 2, failed: 1 })).toEqual([
      { criteria: 'percent_successful_nodes', needed: 67, actual: 66.67 },
    ]);
    expect(evaluateCriteria({ percentSuccessfulNodes: 66 }, { total: 3, succeeded: 2, failed: 1 })).toEqual([]);
  });

  it('passes with no criteria and treats an empty group as 100%', () => {
    expect(evaluateCriteria(undefined, { total: 2, succeeded: 0, failed: 2 })).toEqual([]);
    expect(
      evaluateCriteria(
        { percentSuccessfulNodes: 100, maximumFailedNodes: 0, minimumSuccessfulNodes: 0 },
        { total: 0, succeeded: 0, failed: 0 },
      ),
    ).toEqual([]);
  });
});
