import { parseTaskData } from '@granule/task-model';
import { applySettingsPatch } from './config-model';
import { environmentGraph, roleNodes, selectTaskRange } from './task-subgraph';
import { parseTaskRecordList, toTaskRecord } from './task-record';

const RECORDS = [
  {
    id: 'controller',
    type: 'group',
    roles: ['controller'],
    tasks: ['netconfig'],
    fault_tolerance: '-50%',
    strategy: { type: 'one_by_one' },
  },
  {
    id: 'netconfig',
    type: 'puppet',
    version: '2.0.0',
    groups: ['controller', '/^comp/'],
    requires: ['deploy_start'],
    required_for: ['deploy_end'],
    parameters: { puppet_manifest: 'net.pp', timeout: 60 },
  },
  {
    id: 'hiera',
    type: 'shell',
    version: '2.0.0',
    roles: '*',
    requires: ['netconfig'],
    condition: 'settings:common.debug.value == true',
    fail_on_error: false,
    parameters: { cmd: 'true', strategy: { type: 'parallel', amount: 2 } },
  },
  {
    id: 'galera',
    type: 'shell',
    version: '2.0.0',
    roles: ['controller'],
    requires: ['hiera'],
    'cross-depends': [
      { name: '/^net/', role: 'self' },
      { name: 'hiera', role: ['compute'], policy: 'any' },
    ],
    parameters: { cmd: 'true' },
  },
  { id: 'motd', type: 'shell', roles: ['master'], stage: 'post_deployment/100', parameters: { cmd: 'true' } },
];

const parse = (records: unknown[]) => {
  const r = parseTaskData(records, 'test.yaml', { format: 'deployment-tasks' });
  expect(r.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return r.tasks;
};
const withoutSource = (tasks: ReturnType<typeof parse>) => tasks.map(({ source: _source, ...rest }) => rest);

describe('toTaskRecord', () => {
  it('round trip - writing a parsed task and reading it again gives the same task', () => {
    const tasks = parse(RECORDS);
    expect(withoutSource(parse(tasks.map(toTaskRecord)))).toEqual(withoutSource(tasks));
  });

  it('writes selectors, fault tolerance and strategies in the Fuel form', () => {
    const [group, netconfig, hiera, galera, motd] = parse(RECORDS).map(toTaskRecord);
    expect(group).toEqual({
      id: 'controller',
      type: 'group',
      roles: ['controller'],
      tasks: ['netconfig'],
      strategy: { type: 'one_by_one' },
      fault_tolerance: '-50%',
    });
    expect(netconfig.roles).toEqual(['controller', '/^comp/']);
    expect([hiera.roles, hiera.fail_on_error, hiera.strategy, hiera.parameters]).toEqual([
      '*',
      false,
      { type: 'parallel', amount: 2 },
      { cmd: 'true' },
    ]);
    expect(galera['cross-depends']).toEqual([
      { name: '/^net/', role: 'self' },
      { name: 'hiera', role: ['compute'], policy: 'any' },
    ]);
    expect([motd.roles, motd.stage]).toEqual(['master', 'post_deployment/100']);
  });
});

describe('selectTaskRange (seed 002 filters)', () => {
  const tasks = parseTaskRecordList(RECORDS, 'r').tasks;
  const nodes = [
    { uid: 'n1', roles: ['controller'] },
    { uid: 'n2', roles: ['compute'] },
  ];

  // hiera and galera share the controller role, so on n1 they are members of the group
  // `controller`: the group starts before its members and is done after the last of them.
  it('start - the task and everything after it, in plan order (the group is done last)', () => {
    expect(selectTaskRange(tasks, nodes, { start: 'hiera' }).map((t) => t.id)).toEqual([
      'hiera',
      'galera',
      'controller',
    ]);
  });

  it('end - the task and everything it needs, the group it runs in first', () => {
    expect(selectTaskRange(tasks, nodes, { end: 'hiera' }).map((t) => t.id)).toEqual([
      'controller',
      'netconfig',
      'hiera',
    ]);
  });

  it('start and end - the intersection, without the group (its start is before netconfig, its end after galera)', () => {
    expect(selectTaskRange(tasks, nodes, { start: 'netconfig', end: 'galera' }).map((t) => t.id)).toEqual([
      'netconfig',
      'hiera',
      'galera',
    ]);
  });

  it('no filter - every task in stored order', () => {
    expect(selectTaskRange(tasks, nodes, {}).map((t) => t.id)).toEqual([
      'controller',
      'netconfig',
      'hiera',
      'galera',
      'motd',
    ]);
  });

  it('an unknown id - names the field and the id', () => {
    expect(() => selectTaskRange(tasks, nodes, { end: 'nope' })).toThrow("end: no task has this id ('nope')");
  });
});

describe('roleNodes', () => {
  it('one node per role name the tasks mention, plus master; regex-only roles get none', () => {
    expect(roleNodes(parseTaskRecordList(RECORDS, 'r').tasks)).toEqual([
      { uid: 'role-compute', roles: ['compute'] },
      { uid: 'role-controller', roles: ['controller'] },
      { uid: 'master', roles: [] },
    ]);
  });
});

describe('environmentGraph', () => {
  const release = { label: 'releases/1', graphs: { default: RECORDS.slice(1, 3), provisioning: [] } };

  it('environment overrides beat plugins, which beat the release; overrides keep the task in place', () => {
    const tasks = environmentGraph({
      release,
      plugins: [
        {
          name: 'p',
          graphs: { default: [{ id: 'hiera', type: 'shell', roles: ['compute'], parameters: { cmd: 'plugin' } }] },
        },
      ],
      overrides: [{ id: 'netconfig', type: 'shell', roles: ['controller'], parameters: { cmd: 'override' } }],
      overridesLabel: 'environments/1/deployment_tasks',
      type: 'default',
    });
    expect(tasks.map((t) => [t.id, t.parameters.cmd, t.source.layer])).toEqual([
      ['netconfig', 'override', 'cluster'],
      ['hiera', 'plugin', 'plugin'],
    ]);
  });

  it('an unknown graph type - lists the types there are', () => {
    expect(() =>
      environmentGraph({
        release,
        plugins: [{ name: 'p', graphs: { deletion: [] } }],
        overrides: [],
        overridesLabel: 'o',
        type: 'x',
      }),
    ).toThrow("type: graph 'x' does not exist; the environment has: default, deletion, provisioning");
  });
});

describe('applySettingsPatch', () => {
  it('sets dotted paths, creates mappings on the way, removes keys set to null, leaves the input alone', () => {
    const before = { common: { debug: { value: false } }, storage: 'flat' };
    const after = applySettingsPatch(before, {
      'common.debug.value': true,
      'storage.ceph.value': true,
      'common.debug': null,
    });
    expect(after).toEqual({ common: {}, storage: { ceph: { value: true } } });
    expect(before).toEqual({ common: { debug: { value: false } }, storage: 'flat' });
  });

  it('removing a key that is not there changes nothing: a scalar on its path stays, no mapping is made', () => {
    expect(applySettingsPatch({ a: 2, b: { c: 1 } }, { 'a.b': null, 'x.y.z': null, 'b.c.d': null })).toEqual({
      a: 2,
      b: { c: 1 },
    });
  });

  it('a __proto__ or constructor path - refused, every one named, and Object.prototype untouched', () => {
    const before = { a: 1 };
    expect(() =>
      applySettingsPatch(before, { '__proto__.polluted': 'yes', 'a.constructor.prototype.x': 1, 'b..c': 2 }),
    ).toThrow(
      expect.objectContaining({
        code: 'INVALID_INPUT',
        diagnostics: [
          expect.objectContaining({ code: 'INPUT_FORBIDDEN_KEY', path: 'settings_patch.__proto__.polluted' }),
          expect.objectContaining({ code: 'INPUT_FORBIDDEN_KEY', path: 'settings_patch.a.constructor.prototype.x' }),
          expect.objectContaining({ code: 'CONFIG_BAD_FIELD', path: 'settings_patch.b..c' }),
        ],
      }),
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(before).toEqual({ a: 1 });
  });
});
