import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidInputError, UsageError } from '@granule/core';
import { parse } from 'yaml';
import {
  planStrategyFile,
  renderPlan,
  renderSimulate,
  renderValidate,
  simulateStrategyFile,
  validateStrategyFile,
} from './strategy.command';

const fixtures = join(
  __dirname,
  '..',
  '..',
  '..',
  '..',
  'libs',
  'domain',
  'deployment-strategy',
  'src',
  '__fixtures__',
);
const STRATEGY = join(fixtures, 'seed-strategy.yaml');
const NODES = join(fixtures, 'seed-nodes.yaml');
const dir = mkdtempSync(join(tmpdir(), 'granule-strategy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const write = (name: string, text: string): string => {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
};

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

describe('strategy validate', () => {
  it('accepts the seed example with its nodes', async () => {
    expect(await validateStrategyFile(STRATEGY, NODES)).toEqual({ valid: true, errors: [], warnings: [] });
  });

  it('lists every error and node warning as "file:line: path: message"', async () => {
    const file = write(
      'bad.yaml',
      [
        'groups:',
        '  - name: a',
        '    critical: maybe',
        '    depends_on: [a]',
        '    selectors: [{node_tags: [storage]}]',
        '    success_criteria: {percent_successful_nodes: 150}',
        '',
      ].join('\n'),
    );
    const nodes = write('nodes.yaml', 'nodes:\n  - uid: n1\n    roles: []\n');
    expect(await validateStrategyFile(file, nodes)).toEqual({
      valid: false,
      errors: [
        `${file}:3: groups[0] (a).critical: expected true or false, got "maybe"`,
        `${file}:6: groups[0] (a).success_criteria.percent_successful_nodes: expected an integer 0-100, got 150`,
        `${file}:4: groups[0] (a).depends_on: circular dependency: a -> a`,
      ],
      warnings: [
        `${file}:5: groups[0] (a).selectors: selects no node`,
        `${file}: node 'n1' is selected by no group and will not be deployed`,
      ],
    });
  });

  it('renders text with a summary line and json as the output object', () => {
    const out = {
      valid: false,
      errors: ['s.yaml:3: groups[0].name: required, expected a non-empty string'],
      warnings: [],
    };
    expect(renderValidate(out, 's.yaml', 'text')).toBe(
      'error: s.yaml:3: groups[0].name: required, expected a non-empty string\ns.yaml: invalid (1 error, 0 warnings)\n',
    );
    expect(JSON.parse(renderValidate(out, 's.yaml', 'json'))).toEqual(out);
  });

  it('a missing file is invalid input naming the file', async () => {
    const err = await rejection(validateStrategyFile(join(dir, 'nope.yaml')));
    expect(err).toBeInstanceOf(InvalidInputError);
    expect(err.message).toBe(`${join(dir, 'nope.yaml')}: no such file or directory`);
  });
});

describe('strategy plan', () => {
  it('gives the order and each group nodes and actionable nodes', async () => {
    const { output } = await planStrategyFile(STRATEGY, NODES);
    expect(output).toEqual({
      order: ['monitoring-nodes', 'ntp-node', 'control-nodes', 'compute-nodes-1', 'compute-nodes-2'],
      groups: [
        { name: 'monitoring-nodes', critical: false, nodes: ['mon01', 'mon02'], actionable: ['mon01', 'mon02'] },
        { name: 'ntp-node', critical: true, nodes: ['ntp01'], actionable: ['ntp01'] },
        {
          name: 'control-nodes',
          critical: true,
          nodes: ['ctl01', 'ctl02', 'ctl03', 'ctl04'],
          actionable: ['ctl01', 'ctl02', 'ctl03', 'ctl04'],
        },
        { name: 'compute-nodes-1', critical: false, nodes: ['cmp101', 'cmp102'], actionable: ['cmp101', 'cmp102'] },
        { name: 'compute-nodes-2', critical: false, nodes: ['cmp201', 'cmp202'], actionable: ['cmp201', 'cmp202'] },
      ],
    });
    expect(parse(renderPlan(output, 'yaml'))).toEqual(output);
    expect(renderPlan(output, 'table').split('\n').slice(0, 3)).toEqual([
      'ORDER  NAME              CRITICAL  NODES                    ACTIONABLE',
      '1      monitoring-nodes  false     mon01,mon02              mon01,mon02',
      '2      ntp-node          true      ntp01                    ntp01',
    ]);
  });

  it('refuses an invalid strategy or NODES file with every error of both', async () => {
    const strategy = write(
      'cyc.yaml',
      'groups:\n  - {name: a, critical: true, depends_on: [b], selectors: []}\n  - {name: b, critical: true, depends_on: [a], selectors: []}\n',
    );
    const nodes = write('dup.yaml', '- uid: 1\n- uid: 1\n');
    const err = await rejection(planStrategyFile(strategy, nodes));
    expect(err).toBeInstanceOf(InvalidInputError);
    expect(err.message.split('\n')).toEqual([
      `${nodes}:2: [1].uid: duplicate uid '1' at line 2, first defined at line 1 ([0])`,
      `${strategy}:2: groups[0] (a).depends_on: circular dependency: a -> b -> a`,
    ]);
  });
});

describe('strategy simulate', () => {
  it('ntp-node prepare fails - outcome failed, dependents FAILED by dependency', async () => {
    const { output } = await simulateStrategyFile(STRATEGY, NODES, { prepare: ['ntp01'] });
    expect(output.outcome).toBe('failed');
    expect(output.groups).toEqual({
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
    });
    expect(Object.entries(output.nodes).filter(([, s]) => s !== 'not_started')).toEqual([
      ['ntp01', 'failed'],
      ['mon01', 'deployed'],
      ['mon02', 'deployed'],
    ]);
  });

  it('compute-nodes-2 deploy fails - outcome partial; table shows groups, nodes and the processing log', async () => {
    const computed = await simulateStrategyFile(STRATEGY, NODES, { deploy: ['cmp201', 'cmp202'] });
    expect(computed.output.outcome).toBe('partial');
    expect(computed.output.groups['compute-nodes-2']).toEqual({
      status: 'FAILED',
      failures: [{ criteria: 'percent_successful_nodes', needed: 50, actual: 0 }],
    });
    const table = renderSimulate(computed, 'table');
    expect(table).toContain(
      'compute-nodes-2   false     FAILED    deploy  percent_successful_nodes: needed 50, got 0\n',
    );
    expect(table).toContain('failed       2      cmp201,cmp202\n');
    expect(table).toContain(
      '| deploy compute-nodes-2    <FAILED>\nFinish (success with some nodes/groups failed)\noutcome: partial\n',
    );
    expect(JSON.parse(renderSimulate(computed, 'json'))).toEqual(computed.output);
  });

  it('unknown uids in --fail-* are a usage error naming them', async () => {
    const err = await rejection(
      simulateStrategyFile(STRATEGY, NODES, { prepare: ['ntp01', 'ghost'], deploy: ['x', 'y'] }),
    );
    expect(err).toBeInstanceOf(UsageError);
    expect(err.message).toBe('--fail-prepare: unknown node uid(s): ghost; --fail-deploy: unknown node uid(s): x, y');
  });
});
