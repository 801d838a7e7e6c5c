import { InvalidInputError } from '@granule/core';
import type { NodeSpec } from '@granule/task-model';
import { seedExample, testGroup, testNodes } from './__fixtures__/seed-fixture';
import { selectNodes } from './node-selector';
import { defaultStrategy, orderGroups, planStrategy } from './strategy-plan';
import type { GroupSelector } from './strategy.types';

const sel = (s: Partial<GroupSelector>): GroupSelector => ({
  nodeNames: [],
  nodeTags: [],
  nodeLabels: [],
  rackNames: [],
  ...s,
});

describe('planStrategy', () => {
  it('seed example - orders by dependency generation, then document order, and resolves nodes', () => {
    const { strategy, nodes } = seedExample();
    const plan = planStrategy(strategy, nodes);
    // Generation 0: monitoring-nodes (4th in the document), ntp-node (5th); 1: control-nodes; 2: compute-nodes-1, compute-nodes-2.
    expect(plan.order).toEqual(['monitoring-nodes', 'ntp-node', 'control-nodes', 'compute-nodes-1', 'compute-nodes-2']);
    expect(plan.groups.map((g) => [g.name, g.critical, g.nodes, g.actionable])).toEqual([
      ['monitoring-nodes', false, ['mon01', 'mon02'], ['mon01', 'mon02']],
      ['ntp-node', true, ['ntp01'], ['ntp01']],
      ['control-nodes', true, ['ctl01', 'ctl02', 'ctl03', 'ctl04'], ['ctl01', 'ctl02', 'ctl03', 'ctl04']],
      ['compute-nodes-1', false, ['cmp101', 'cmp102'], ['cmp101', 'cmp102']],
      ['compute-nodes-2', false, ['cmp201', 'cmp202'], ['cmp201', 'cmp202']],
    ]);
    expect(plan.nodes).toHaveLength(11);
  });

  it('overlap - a node is actionable only in the first group of the order that selects it, but counted in all', () => {
    const nodes = testNodes({ a: ['x'], b: ['x', 'y'], c: ['y'] });
    const plan = planStrategy(
      { groups: [testGroup('second', { tags: ['y'], dependsOn: ['first'] }), testGroup('first', { tags: ['x'] })] },
      nodes,
    );
    expect(plan.groups).toEqual([
      { name: 'first', critical: true, dependsOn: [], nodes: ['a', 'b'], actionable: ['a', 'b'] },
      { name: 'second', critical: true, dependsOn: ['first'], nodes: ['b', 'c'], actionable: ['c'] },
    ]);
  });

  it('uses the deepest dependency for the generation', () => {
    const order = orderGroups([
      testGroup('late', { dependsOn: ['root', 'mid'] }),
      testGroup('mid', { dependsOn: ['root'], critical: false }),
      testGroup('other', { critical: false }),
      testGroup('root'),
    ]);
    // late: 1 + max(root 0, mid 1) = 2; with the shallowest dependency it would tie with mid and come first.
    expect(order.map((g) => g.name)).toEqual(['other', 'root', 'mid', 'late']);
  });

  it('keeps document order within a generation: a later critical group does not jump ahead of an earlier non-critical one', () => {
    const order = orderGroups([
      testGroup('extras', { critical: false }),
      testGroup('core'),
      testGroup('addon', { critical: false, dependsOn: ['core'] }),
      testGroup('db', { dependsOn: ['extras'] }),
    ]);
    expect(order.map((g) => [g.name, g.critical])).toEqual([
      ['extras', false],
      ['core', true],
      ['addon', false],
      ['db', true],
    ]);
  });

  it('refuses an invalid strategy or duplicate node uids with every error', () => {
    const strategy = { groups: [testGroup('a', { dependsOn: ['b'] }), testGroup('b', { dependsOn: ['a'] })] };
    const nodes: NodeSpec[] = [
      { uid: '1', roles: [] },
      { uid: '1', roles: [] },
    ];
    let caught: unknown;
    try {
      planStrategy(strategy, nodes);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidInputError);
    expect((caught as InvalidInputError).message).toBe(
      "groups[0] (a).depends_on: circular dependency: a -> b -> a\nduplicate node uid '1'",
    );
  });
});

describe('selectNodes', () => {
  const nodes: NodeSpec[] = [
    {
      uid: '1',
      name: 'node01',
      roles: [],
      tags: ['control'],
      rack: 'rack01',
      labels: { ucp_control_plane: 'enabled' },
    },
    { uid: '2', name: 'node02', roles: [], tags: ['compute'], rack: 'rack01' },
    {
      uid: '3',
      name: 'node03',
      roles: [],
      tags: ['control'],
      rack: 'rack02',
      labels: { ucp_control_plane: 'disabled' },
    },
    { uid: '4', name: 'node04', roles: [], rack: 'rack02', labels: { ucp_control_plane: 'enabled' } },
  ];

  it('intersects the fields of one selector and unites the selectors (the seed example)', () => {
    const selectors = [
      sel({ nodeNames: ['node01', 'node02'], rackNames: ['rack01'], nodeTags: ['control'] }),
      sel({ nodeNames: ['node04'], nodeLabels: [{ key: 'ucp_control_plane', value: 'enabled' }] }),
    ];
    expect(selectNodes(selectors, nodes)).toEqual(['1', '4']);
  });

  it('matches node_names against the name or the uid', () => {
    expect(selectNodes([sel({ nodeNames: ['3', 'node02'] })], nodes)).toEqual(['2', '3']);
  });

  it('matches any listed value within a field', () => {
    expect(
      selectNodes(
        [
          sel({
            nodeLabels: [
              { key: 'ucp_control_plane', value: 'disabled' },
              { key: 'ucp_control_plane', value: 'enabled' },
            ],
          }),
        ],
        nodes,
      ),
    ).toEqual(['1', '3', '4']);
    expect(selectNodes([sel({ rackNames: ['rack02'], nodeTags: ['control', 'compute'] })], nodes)).toEqual(['3']);
  });

  it('selects every node with no selectors, or with a selector without criteria, even next to others', () => {
    expect(selectNodes([], nodes)).toEqual(['1', '2', '3', '4']);
    expect(selectNodes([sel({ nodeNames: ['node01'] }), sel({})], nodes)).toEqual(['1', '2', '3', '4']);
  });

  it('selects nothing when no node matches', () => {
    expect(selectNodes([sel({ nodeTags: ['storage'] })], nodes)).toEqual([]);
  });
});

describe('defaultStrategy', () => {
  it('is one critical group naming the given nodes and requiring 100% success', () => {
    const nodes = testNodes({ a: [], b: [] });
    const strategy = defaultStrategy(nodes);
    expect(strategy).toEqual({
      name: 'default',
      groups: [
        {
          name: 'all-nodes',
          critical: true,
          dependsOn: [],
          selectors: [{ nodeNames: ['a', 'b'], nodeTags: [], nodeLabels: [], rackNames: [] }],
          successCriteria: { percentSuccessfulNodes: 100 },
        },
      ],
    });
    expect(planStrategy(strategy, nodes).groups[0].actionable).toEqual(['a', 'b']);
    expect(defaultStrategy().groups[0].selectors).toEqual([]);
  });
});
