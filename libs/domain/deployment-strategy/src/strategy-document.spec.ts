import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatDiagnostic } from '@granule/core';
import type { NodeSpec } from '@granule/task-model';
import { parseStrategyDocument } from './strategy-document';
import { validateStrategy } from './strategy-validation';
import type { DeploymentStrategy } from './strategy.types';

const seedText = readFileSync(join(__dirname, '__fixtures__', 'seed-strategy.yaml'), 'utf8');
const errorsOf = (input: unknown, nodes?: NodeSpec[]): string[] =>
  parseStrategyDocument(input, 's.yaml', nodes).diagnostics.map(formatDiagnostic);
const group = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  name: 'g',
  critical: true,
  depends_on: [],
  selectors: [],
  ...extra,
});

describe('parseStrategyDocument', () => {
  it('reads the seed example envelope into typed groups in document order', () => {
    const { strategy, diagnostics } = parseStrategyDocument(seedText, 'seed.yaml');
    expect(diagnostics).toEqual([]);
    expect(strategy?.name).toBe('deployment-strategy');
    expect(strategy?.groups.map((g) => g.name)).toEqual([
      'control-nodes',
      'compute-nodes-1',
      'compute-nodes-2',
      'monitoring-nodes',
      'ntp-node',
    ]);
    expect(strategy?.groups[0]).toEqual({
      name: 'control-nodes',
      critical: true,
      dependsOn: ['ntp-node'],
      selectors: [{ nodeNames: [], nodeTags: ['control'], nodeLabels: [], rackNames: ['rack03'] }],
      successCriteria: { percentSuccessfulNodes: 90, minimumSuccessfulNodes: 3, maximumFailedNodes: 1 },
    });
    expect(strategy?.groups[3].successCriteria).toBeUndefined();
  });

  it('accepts a bare {groups} map, as text or as data', () => {
    const data = {
      groups: [
        group({ selectors: [{ node_labels: ['tier : db', { ucp_control_plane: 'enabled' }], node_names: [5] }] }),
      ],
    };
    const expected: DeploymentStrategy = {
      groups: [
        {
          name: 'g',
          critical: true,
          dependsOn: [],
          selectors: [
            {
              nodeNames: ['5'],
              nodeTags: [],
              nodeLabels: [
                { key: 'tier', value: 'db' },
                { key: 'ucp_control_plane', value: 'enabled' },
              ],
              rackNames: [],
            },
          ],
        },
      ],
    };
    expect(parseStrategyDocument(data, 's.yaml')).toEqual({ strategy: expected, diagnostics: [] });
    expect(parseStrategyDocument(JSON.stringify(data), 's.yaml')).toEqual({ strategy: expected, diagnostics: [] });
  });

  it('picks the DeploymentStrategy document out of a multi-document site design', () => {
    const text = `schema: shipyard/DeploymentConfiguration/v1\ndata: {}\n---\n${seedText.replace(/^#.*\n---\n/, '')}`;
    const { strategy, diagnostics } = parseStrategyDocument(text, 'site.yaml');
    expect(diagnostics).toEqual([]);
    expect(strategy?.groups).toHaveLength(5);
  });

  it('percent over 100 - names the group, the field, expected and found, with the line', () => {
    const text = seedText.replace('percent_successful_nodes: 50', 'percent_successful_nodes: 150');
    expect(errorsOf(text)).toEqual([
      's.yaml:40: groups[1] (compute-nodes-1).success_criteria.percent_successful_nodes: expected an integer 0-100, got 150',
    ]);
  });

  it('reports every shape error of every group, not only the first', () => {
    const data = {
      groups: [
        { critical: 'yes', depends_on: 'a', selectors: {}, colour: 'red' },
        group({ name: '', selectors: [{ node_tags: 'control', rack: ['r1'], node_names: [true] }, 'all'] }),
        group({
          name: 'c',
          success_criteria: {
            percent_successful_nodes: 75.5,
            minimum_successful_nodes: -1,
            maximum_failed_nodes: '2',
            max_failed: 1,
          },
        }),
        group({ name: 'd', success_criteria: {} }),
        group({ name: 'e', success_criteria: null, depends_on: [7] }),
        'not-a-group',
      ],
    };
    expect(errorsOf(data)).toEqual([
      "s.yaml: groups[0].colour: unknown key 'colour' (expected name, critical, depends_on, selectors, success_criteria)",
      's.yaml: groups[0].name: required, expected a non-empty string',
      's.yaml: groups[0].critical: expected true or false, got "yes"',
      's.yaml: groups[0].depends_on: expected a list of group names, got "a"',
      's.yaml: groups[0].selectors: expected a list of selectors, got an empty mapping',
      's.yaml: groups[1].name: expected a non-empty string, got ""',
      "s.yaml: groups[1].selectors[0].rack: unknown key 'rack' (expected node_names, node_tags, node_labels, rack_names)",
      's.yaml: groups[1].selectors[0].node_names[0]: expected a non-empty string, got true',
      's.yaml: groups[1].selectors[0].node_tags: expected a list, got "control"',
      's.yaml: groups[1].selectors[1]: expected a mapping with node_names, node_tags, node_labels, rack_names (any of them), got "all"',
      's.yaml: groups[2] (c).success_criteria.percent_successful_nodes: expected an integer 0-100, got 75.5',
      's.yaml: groups[2] (c).success_criteria.minimum_successful_nodes: expected an integer >= 0, got -1',
      's.yaml: groups[2] (c).success_criteria.maximum_failed_nodes: expected an integer >= 0, got "2"',
      "s.yaml: groups[2] (c).success_criteria.max_failed: unknown key 'max_failed' (expected percent_successful_nodes, minimum_successful_nodes, maximum_failed_nodes)",
      's.yaml: groups[3] (d).success_criteria: expected a mapping with at least one of percent_successful_nodes, minimum_successful_nodes, maximum_failed_nodes, got an empty mapping',
      's.yaml: groups[4] (e).depends_on[0]: expected a group name, got 7',
      's.yaml: groups[4] (e).success_criteria: expected a mapping with at least one of percent_successful_nodes, minimum_successful_nodes, maximum_failed_nodes, got null',
      's.yaml: groups[5]: expected a mapping with name, critical, depends_on, selectors, success_criteria, got "not-a-group"',
    ]);
    expect(parseStrategyDocument(data, 's.yaml').strategy).toBeUndefined();
  });

  it('required fields - each missing one is named', () => {
    expect(errorsOf({ groups: [{ name: 'a' }] })).toEqual([
      's.yaml: groups[0] (a).critical: required, expected true or false',
      's.yaml: groups[0] (a).depends_on: required, expected a list of group names (may be empty)',
      's.yaml: groups[0] (a).selectors: required, expected a list of selectors (may be empty)',
    ]);
  });

  it('labels - rejects strings without exactly one colon or with an empty side, naming the label', () => {
    const data = {
      groups: [group({ selectors: [{ node_labels: ['nocolon', 'a:b:c', ' :v', 'k: ', { k: null }, 3] }] })],
    };
    const prefix = 's.yaml: groups[0] (g).selectors[0].node_labels';
    const tail = 'expected a label "key:value" with one colon and a non-empty key and value, got';
    expect(errorsOf(data)).toEqual([
      `${prefix}[0]: ${tail} "nocolon"`,
      `${prefix}[1]: ${tail} "a:b:c"`,
      `${prefix}[2]: ${tail} " :v"`,
      `${prefix}[3]: ${tail} "k: "`,
      `${prefix}[4].k: ${tail} k: null`,
      `${prefix}[5]: ${tail} 3`,
    ]);
  });

  it('names - duplicates and unknown dependencies are errors', () => {
    const data = {
      groups: [group({ name: 'a' }), group({ name: 'b', depends_on: ['a', 'zz'] }), group({ name: 'a' })],
    };
    expect(errorsOf(data)).toEqual([
      "s.yaml: groups[2] (a).name: duplicate group name 'a', first used by groups[0]",
      "s.yaml: groups[1] (b).depends_on[1]: unknown group 'zz' (the groups are a, b)",
    ]);
  });

  it('cycle - names every group on the cycle in cycle order, once per cycle', () => {
    const data = {
      groups: [
        group({ name: 'root' }),
        group({ name: 'a', depends_on: ['root', 'b'] }),
        group({ name: 'b', depends_on: ['c'] }),
        group({ name: 'c', depends_on: ['a'] }),
        group({ name: 'self', depends_on: ['self'] }),
        group({ name: 'x', depends_on: ['y'] }),
        group({ name: 'y', depends_on: ['x'] }),
      ],
    };
    expect(errorsOf(data)).toEqual([
      's.yaml: groups[1] (a).depends_on: circular dependency: a -> b -> c -> a',
      's.yaml: groups[4] (self).depends_on: circular dependency: self -> self',
      's.yaml: groups[5] (x).depends_on: circular dependency: x -> y -> x',
    ]);
  });

  it('cycle - reported with the line of the first group on it', () => {
    const text = [
      'groups:',
      '  - name: a',
      '    critical: true',
      '    depends_on: [b]',
      '    selectors: []',
      '  - name: b',
      '    critical: false',
      '    depends_on: [a]',
      '    selectors: []',
    ].join('\n');
    expect(errorsOf(text)).toEqual(['s.yaml:4: groups[0] (a).depends_on: circular dependency: a -> b -> a']);
  });

  it('document - rejects a wrong schema, a missing groups list and an empty one', () => {
    expect(errorsOf('schema: shipyard/DeploymentConfiguration/v1\ndata: {groups: []}\n')).toEqual([
      's.yaml:1: schema: expected shipyard/DeploymentStrategy/v1, got "shipyard/DeploymentConfiguration/v1"',
    ]);
    expect(errorsOf('schema: shipyard/DeploymentStrategy/v1\ndata:\n  groups: []\n')).toEqual([
      's.yaml:3: groups: expected a non-empty list of groups, got an empty list',
    ]);
    expect(errorsOf('name: x\n')).toEqual([
      's.yaml:1: expected a DeploymentStrategy document (schema: shipyard/DeploymentStrategy/v1 with data.groups) or a mapping with groups, got a mapping without groups (keys: name)',
    ]);
    expect(errorsOf('- a\n')).toEqual([
      's.yaml:1: expected a DeploymentStrategy document (schema: shipyard/DeploymentStrategy/v1 with data.groups) or a mapping with groups, got a list',
    ]);
    expect(errorsOf('')).toEqual(['s.yaml: expected a DeploymentStrategy document, got an empty file']);
  });

  it('reports YAML syntax errors with a line and no strategy', () => {
    const result = parseStrategyDocument('groups:\n  - name: [a\n', 's.yaml');
    expect(result.strategy).toBeUndefined();
    expect(result.diagnostics[0]).toMatchObject({
      severity: 'error',
      code: 'STRATEGY_YAML_SYNTAX',
      file: 's.yaml',
      line: expect.any(Number),
    });
  });

  it('with nodes - warns about empty groups, unknown node names and ungrouped nodes, still valid', () => {
    const nodes: NodeSpec[] = [
      { uid: '1', name: 'ctl01', roles: [], tags: ['control'] },
      { uid: '2', roles: [] },
    ];
    const data = {
      groups: [
        group({ name: 'ctl', selectors: [{ node_names: ['ctl01', 'ghost'] }] }),
        group({ name: 'none', selectors: [{ node_tags: ['storage'] }] }),
      ],
    };
    const result = parseStrategyDocument(data, 's.yaml', nodes);
    expect(result.strategy).toBeDefined();
    expect(result.diagnostics.map((d) => `${d.severity} ${d.code} ${formatDiagnostic(d)}`)).toEqual([
      "warning STRATEGY_UNKNOWN_NODE s.yaml: groups[0] (ctl).selectors[0].node_names[1]: no node has the name or uid 'ghost'",
      'warning STRATEGY_EMPTY_GROUP s.yaml: groups[1] (none).selectors: selects no node',
      "warning STRATEGY_NODE_UNGROUPED s.yaml: node '2' is selected by no group and will not be deployed",
    ]);
  });
});

describe('validateStrategy', () => {
  it('checks typed strategies built in code with the same messages', () => {
    const strategy: DeploymentStrategy = {
      groups: [
        { name: ' ', critical: true, dependsOn: [], selectors: [] },
        {
          name: 'b',
          critical: false,
          dependsOn: ['c'],
          selectors: [{ nodeNames: [], nodeTags: [], nodeLabels: [{ key: 'k', value: '' }], rackNames: [] }],
          successCriteria: { percentSuccessfulNodes: 101 },
        },
        { name: 'c', critical: false, dependsOn: ['b'], selectors: [], successCriteria: {} },
      ],
    };
    expect(validateStrategy(strategy).map(formatDiagnostic)).toEqual([
      'groups[0].name: expected a non-empty string, got " "',
      'groups[1] (b).success_criteria.percent_successful_nodes: expected an integer 0-100, got 101',
      'groups[1] (b).selectors[0].node_labels[0]: expected a label "key:value" with one colon and a non-empty key and value, got "k:"',
      'groups[2] (c).success_criteria: expected at least one of percent_successful_nodes, minimum_successful_nodes, maximum_failed_nodes, got an empty mapping',
      'groups[1] (b).depends_on: circular dependency: b -> c -> b',
    ]);
  });

  it('accepts the seed example', () => {
    const { strategy } = parseStrategyDocument(seedText, 'seed.yaml');
    expect(validateStrategy(strategy as DeploymentStrategy)).toEqual([]);
  });
});

describe('parseStrategyDocument - hostile YAML', () => {
  it('an alias bomb - an error with the file and line, no exception', () => {
    const lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 7; i++)
      lines.push(
        `a${i}: &a${i} [${Array(9)
          .fill(`*a${i - 1}`)
          .join(',')}]`,
      );
    expect(errorsOf(`${lines.join('\n')}\ngroups: []\n`)).toEqual([
      's.yaml:7: aliases here expand the document to 6,053,453 nodes; the bound is 1,000,000 (an alias bomb?)',
    ]);
  });

  it('deep nesting and binary text - errors with the line', () => {
    expect(errorsOf(`groups: ${'['.repeat(100)}${']'.repeat(100)}\n`)).toEqual([
      's.yaml:1: nested deeper than 64 levels (mappings and lists inside each other), the bound',
    ]);
    expect(errorsOf('groups:\n\u0000\u0001')).toEqual([
      's.yaml:2: not a text file: it has a NUL byte (a binary file?); expected UTF-8 YAML or JSON',
    ]);
  });
});
