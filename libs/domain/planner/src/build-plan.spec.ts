import { InvalidInputError } from '@granule/core';
import { assertNoErrors, parseTaskFile } from '@granule/task-model';
import type { NodeSpec, TaskDefinition } from '@granule/task-model';
import { SEED_002_GROUPS, SEED_002_NODES } from './__fixtures__/seed-002';
import { buildPlan } from './build-plan';
import { instanceName, planInstances, writePlanJson } from './plan-output';
import type { Plan, PlanFilters, PlanInstance } from './plan-types';
import { PlanCycleError } from './planner-errors';
import { simulatePlan } from './simulate-plan';
import { mergeTaskLayers } from './task-layers';

const tasksOf = (yaml: string, file = 'deployment_tasks.yaml', plugin?: string): TaskDefinition[] =>
  assertNoErrors(parseTaskFile(yaml, file, { plugin }));
const node = (uid: string, ...roles: string[]): NodeSpec => ({ uid, roles });

function plan(yaml: string, nodes: NodeSpec[], filters?: PlanFilters): Plan {
  return buildPlan({ tasks: tasksOf(yaml), nodes, filters });
}

function byName(p: Plan): Map<string, PlanInstance> {
  return new Map(planInstances(p).map((i) => [`${i.task}@${i.node}`, i]));
}

/** Task instances on real nodes, `task@node`, in the order the simulator starts them. */
function startOrder(p: Plan): string[] {
  return simulatePlan(p)
    .timeline.filter((e) => !e.skipped)
    .map((e) => `${e.task}@${e.node}`);
}

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected an error');
}

describe('buildPlan - seed 002 group strategies', () => {
  const p = plan(SEED_002_GROUPS, SEED_002_NODES);
  const sim = simulatePlan(p);
  const startOf = (task: string, n: string): number =>
    sim.timeline.find((e) => e.task === task && e.node === n)?.start ?? -1;

  it('runs primary-controller, then controllers two at a time in listed order, then network and cinder, then compute', () => {
    const firstTask = (n: string): number => startOf('setup_network', n);
    expect(['node-1', 'node-4', 'node-2', 'node-3', 'node-5', 'node-6', 'node-7', 'node-8'].map(firstTask)).toEqual([
      0, 2, 2, 4, 4, 6, 6, 8,
    ]);
    expect(sim.makespan).toBe(10);
  });

  it('runs setup_network then setup_services on every node', () => {
    for (const n of SEED_002_NODES) expect(startOf('setup_services', n.uid)).toBe(startOf('setup_network', n.uid) + 1);
  });

  it('makes the second controller batch wait for the first batch only', () => {
    expect(byName(p).get('setup_network@node-3')?.requires).toEqual(['controller@node-4', 'controller@node-2']);
  });

  it('makes compute wait for both network and controller groups', () => {
    expect(byName(p).get('compute:start@sync')?.requires.sort()).toEqual(['controller:end@sync', 'network:end@sync']);
  });

  it('exposes groups with their nodes for fault tolerance', () => {
    // No fault_tolerance: one more than the group has nodes, so no group fails the run on its own.
    expect(p.groups.map((g) => [g.id, g.nodes, g.faultTolerance])).toEqual([
      ['primary-controller', ['node-1'], 2],
      ['controller', ['node-4', 'node-2', 'node-3', 'node-5'], 5],
      ['cinder', ['node-6'], 2],
      ['compute', ['node-8'], 2],
      ['network', ['node-7'], 2],
    ]);
  });

  it('orders instances so that sorting by priority is a valid execution order', () => {
    const instances = planInstances(p);
    const priority = new Map(instances.map((i) => [`${i.task}@${i.node}`, i.priority]));
    for (const i of instances) for (const r of i.requires) expect(priority.get(r)).toBeLessThan(i.priority);
  });
});

describe('buildPlan - seed 000 stage postfixes', () => {
  const legacy = (stages: string[]): string =>
    stages
      .map((s) => `- role: '*'\n  stage: ${s}\n  type: shell\n  parameters: {cmd: 'echo ${s}', timeout: 42}\n`)
      .join('');
  const layered = (plugins: { name: string; stages: string[] }[], nodes = [node('1', 'controller')]): Plan => {
    const merged = mergeTaskLayers({
      release: [],
      plugins: plugins.map((pl) => ({
        name: pl.name,
        tasks: tasksOf(legacy(pl.stages), `${pl.name}/tasks.yaml`, pl.name),
      })),
    });
    return buildPlan({ tasks: merged.tasks, nodes });
  };
  const orderOf = (p: Plan): string[] =>
    startOrder(p).map((name) => {
      const inst = byName(p).get(name) as PlanInstance;
      return `${inst.parameters.cmd} # ${inst.plugin}`;
    });

  it('orders the worked example exactly as the seed lists it', () => {
    const p = layered([
      {
        name: 'plugin2',
        stages: ['pre_deployment', 'pre_deployment/100.0', 'pre_deployment/-101', 'pre_deployment/0'],
      },
      {
        name: 'plugin1',
        stages: ['pre_deployment', 'pre_deployment/100', 'pre_deployment/-100', 'pre_deployment/-99.9'],
      },
    ]);
    expect(orderOf(p)).toEqual([
      'echo pre_deployment/-101 # plugin2',
      'echo pre_deployment/-100 # plugin1',
      'echo pre_deployment/-99.9 # plugin1',
      'echo pre_deployment # plugin1',
      'echo pre_deployment # plugin2',
      'echo pre_deployment/0 # plugin2',
      'echo pre_deployment/100 # plugin1',
      'echo pre_deployment/100.0 # plugin2',
    ]);
  });

  it('starts plugin Z (100) before plugin A (200)', () => {
    expect(
      orderOf(
        layered([
          { name: 'A', stages: ['pre_deployment/200'] },
          { name: 'Z', stages: ['pre_deployment/100'] },
        ]),
      ),
    ).toEqual(['echo pre_deployment/100 # Z', 'echo pre_deployment/200 # A']);
  });

  it('runs equal priorities in plugin name order: A, then Z', () => {
    expect(
      orderOf(
        layered([
          { name: 'Z', stages: ['pre_deployment/100'] },
          { name: 'A', stages: ['pre_deployment/100'] },
        ]),
      ),
    ).toEqual(['echo pre_deployment/100 # A', 'echo pre_deployment/100 # Z']);
  });

  it('waits for every node of the previous step before the next step starts', () => {
    const p = layered(
      [{ name: 'A', stages: ['post_deployment/1', 'post_deployment/2'] }],
      [node('1', 'controller'), node('2', 'compute')],
    );
    expect(byName(p).get('A.post_deployment.2@1')?.requires.sort()).toEqual([
      'A.post_deployment.1@1',
      'A.post_deployment.1@2',
    ]);
    expect(byName(p).get('A.post_deployment.1@1')?.requires).toEqual(['post_deployment_start@sync']);
    expect(byName(p).get('post_deployment_end@sync')?.requires.sort()).toEqual([
      'A.post_deployment.2@1',
      'A.post_deployment.2@2',
      'post_deployment_start@sync',
    ]);
    expect(byName(p).get('A.post_deployment.1@2')?.stage).toBe('post_deployment');
  });
});

describe('buildPlan - same-node edges', () => {
  const yaml = `
- {id: a, type: shell, roles: '*', parameters: {cmd: a}}
- {id: b, type: shell, roles: [controller], requires: [a], parameters: {cmd: b}}
- {id: c, type: shell, roles: '*', requires: [b], parameters: {cmd: c}}
- {id: d, type: shell, roles: [compute], required_for: [c], parameters: {cmd: d}}
`;
  const p = plan(yaml, [node('ctl', 'controller'), node('cmp', 'compute')]);
  const inst = byName(p);

  it('follows requires on the same node', () => {
    expect(inst.get('b@ctl')?.requires).toEqual(['a@ctl']);
    expect(inst.get('c@ctl')?.requires).toEqual(['b@ctl']);
  });

  it('keeps order through a task that does not run on the node', () => {
    expect(inst.get('c@cmp')?.requires.sort()).toEqual(['a@cmp', 'd@cmp']);
  });

  it('turns required_for into an edge on the node where both run', () => {
    expect(inst.get('d@cmp')?.requires).toEqual([]);
    expect(inst.has('d@ctl')).toBe(false);
  });

  it('never makes a task depend on itself', () => {
    const self = plan('- {id: a, type: shell, roles: "*", requires: [a], parameters: {cmd: a}}', [node('1', 'x')]);
    expect(byName(self).get('a@1')?.requires).toEqual([]);
  });

  it('runs master tasks on the master node', () => {
    const p2 = plan('- {id: m, type: shell, roles: master, parameters: {cmd: m}}', [node('1', 'x')]);
    expect([...byName(p2).keys()].filter((k) => k.startsWith('m@'))).toEqual(['m@master']);
  });

  it('places a task by its stage boundaries', () => {
    const p2 = plan(
      `
- {id: late, type: shell, roles: '*', requires: [post_deployment_start], parameters: {cmd: x}}
- {id: early, type: shell, roles: '*', required_for: [pre_deployment_end], parameters: {cmd: x}}
- {id: free, type: shell, roles: '*', parameters: {cmd: x}}
`,
      [node('1', 'x')],
    );
    const i2 = byName(p2);
    expect([i2.get('late@1')?.stage, i2.get('early@1')?.stage, i2.get('free@1')?.stage]).toEqual([
      'post_deployment',
      'pre_deployment',
      'deployment',
    ]);
  });
});

describe('buildPlan - cross-node edges', () => {
  const nodes = [node('c1', 'controller'), node('c2', 'controller'), node('k1', 'compute'), node('k2', 'compute')];

  it('waits for every matching instance on nodes with the given role (policy all)', () => {
    const p = plan(
      `
- {id: db, type: shell, roles: [controller], parameters: {cmd: db}}
- id: agent
  type: shell
  roles: [compute]
  cross-depends: [{name: db, role: [controller]}]
  parameters: {cmd: agent}
`,
      nodes,
    );
    expect(byName(p).get('agent@k1')?.requires.sort()).toEqual(['db@c1', 'db@c2']);
  });

  it('waits for one matching instance with policy any', () => {
    const p = plan(
      `
- {id: db, type: shell, roles: [controller], parameters: {cmd: db}}
- id: agent
  type: shell
  roles: [compute]
  cross-depends: [{name: db, role: [controller], policy: any}]
  parameters: {cmd: agent}
`,
      nodes,
    );
    const agent = byName(p).get('agent@k1') as PlanInstance;
    // Two consumers share one barrier that needs any of the producers.
    expect(agent.requires).toHaveLength(1);
    const barrier = byName(p).get(agent.requires[0]) as PlanInstance;
    expect(barrier.requires_any).toEqual([['db@c1', 'db@c2']]);
  });

  it('matches names by regex and role self, never the instance itself', () => {
    const p = plan(
      `
- {id: setup-1, type: shell, roles: '*', parameters: {cmd: x}}
- {id: setup-2, type: shell, roles: '*', parameters: {cmd: x}}
- id: finish
  type: shell
  roles: '*'
  cross-depends: [{name: /^setup-/, role: self}]
  parameters: {cmd: x}
`,
      nodes.slice(0, 2),
    );
    expect(byName(p).get('finish@c2')?.requires.sort()).toEqual(['setup-1@c2', 'setup-2@c2']);
  });

  it('lets a task run after the same task on all other nodes when it cross-depends on itself with policy any', () => {
    const p = plan(
      `
- id: join
  type: shell
  roles: [controller]
  cross-depends: [{name: join, role: [controller], policy: any}]
  parameters: {cmd: x}
- {id: seed, type: shell, roles: [controller], required_for: [join], parameters: {cmd: x}}
`,
      nodes.slice(0, 1),
    );
    // A single controller has no other instance to wait for.
    expect(byName(p).get('join@c1')?.requires_any).toBeUndefined();
  });

  it('adds edges from cross-depended-by', () => {
    const p = plan(
      `
- id: vip
  type: shell
  roles: [controller]
  cross-depended-by: [{name: agent, role: [compute]}]
  parameters: {cmd: x}
- {id: agent, type: shell, roles: [compute], parameters: {cmd: x}}
`,
      nodes,
    );
    expect(byName(p).get('agent@k2')?.requires.sort()).toEqual(['vip@c1', 'vip@c2']);
  });

  it('uses a barrier instead of a quadratic number of edges for large fan-in', () => {
    const many = Array.from({ length: 40 }, (_, i) => node(`c${i}`, 'controller')).concat(
      Array.from({ length: 40 }, (_, i) => node(`k${i}`, 'compute')),
    );
    const p = plan(
      `
- {id: db, type: shell, roles: [controller], parameters: {cmd: db}}
- {id: agent, type: shell, roles: [compute], cross-depends: [{name: db, role: [controller]}], parameters: {cmd: x}}
`,
      many,
    );
    const agent = byName(p).get('agent@k7') as PlanInstance;
    expect(agent.requires).toEqual(['agent:cross-depends[0]@sync']);
    expect(byName(p).get('agent:cross-depends[0]@sync')?.requires).toHaveLength(40);
  });
});

describe('buildPlan - conditions', () => {
  const yaml = `
- {id: always, type: shell, roles: '*', parameters: {cmd: x}}
- {id: ceph, type: shell, roles: '*', requires: [always], condition: "settings:storage.ceph.value == true", parameters: {cmd: x}}
- {id: after, type: shell, roles: '*', requires: [ceph], parameters: {cmd: x}}
- {id: big, type: shell, roles: '*', condition: "api.nodes_count() > 2 and cluster:status == 'new'", parameters: {cmd: x}}
- {id: ctl-only, type: shell, roles: '*', condition: "'controller' in node:roles", parameters: {cmd: x}}
`;
  const nodes = [node('1', 'controller'), node('2', 'compute')];

  it('keeps a task with a false condition as skipped, with its edges', () => {
    const p = buildPlan({
      tasks: tasksOf(yaml),
      nodes,
      cluster: { status: 'new', settings: { storage: { ceph: { value: false } } } },
    });
    const i = byName(p);
    expect([i.get('ceph@1')?.skipped, i.get('ceph@1')?.skip_reason]).toEqual([true, 'condition']);
    expect(i.get('after@1')?.requires).toEqual(['ceph@1']);
    expect(i.get('always@1')?.skipped).toBe(false);
  });

  it('evaluates the seed API and node references', () => {
    const p = buildPlan({
      tasks: tasksOf(yaml),
      nodes,
      cluster: { status: 'new', settings: { storage: { ceph: { value: true } } } },
    });
    const i = byName(p);
    expect(i.get('ceph@1')?.skipped).toBe(false);
    expect(i.get('big@1')?.skipped).toBe(true);
    expect([i.get('ctl-only@1')?.skipped, i.get('ctl-only@2')?.skipped]).toEqual([false, true]);
  });

  it('names the task, file and line of a condition that does not parse', () => {
    const err = errorOf(() =>
      plan(
        '- {id: ok, type: shell, roles: "*", parameters: {cmd: x}}\n- {id: bad, type: shell, roles: "*", condition: "cluster:status ==", parameters: {cmd: x}}\n',
        nodes,
      ),
    );
    expect(err).toBeInstanceOf(InvalidInputError);
    expect(err.message).toMatch(/^deployment_tasks\.yaml:2: task 'bad': condition "cluster:status ==": /);
  });
});

describe('buildPlan - errors', () => {
  it('reports every reference to a task that does not exist, with file, line and task', () => {
    const err = errorOf(() =>
      plan(
        `
- {id: a, type: shell, roles: '*', requires: [nope], parameters: {cmd: x}}
- {id: b, type: shell, roles: '*', required_for: [gone], cross-depends: [{name: missing}], parameters: {cmd: x}}
`,
        [node('1', 'x')],
      ),
    );
    expect(err.message.split('\n')).toEqual([
      "deployment_tasks.yaml:2: task 'a': requires names task 'nope', which does not exist",
      "deployment_tasks.yaml:3: task 'b': required_for names task 'gone', which does not exist",
      "deployment_tasks.yaml:3: task 'b': cross-depends names task 'missing', which does not exist",
    ]);
  });

  it('names every task of a cycle in cycle order', () => {
    const err = errorOf(() =>
      plan(
        `
- {id: a, type: shell, roles: '*', requires: [c], parameters: {cmd: x}}
- {id: b, type: shell, roles: '*', requires: [a], parameters: {cmd: x}}
- {id: c, type: shell, roles: '*', requires: [b], parameters: {cmd: x}}
- {id: free, type: shell, roles: '*', parameters: {cmd: x}}
`,
        [node('node-1', 'x')],
      ),
    );
    expect(err).toBeInstanceOf(PlanCycleError);
    const cycle = (err as PlanCycleError).cycle;
    expect(cycle).toHaveLength(4);
    expect(cycle[0]).toBe(cycle[3]);
    // Rotate to start at a: the order must be a -> b -> c -> a.
    const names = cycle.slice(0, 3);
    const k = names.indexOf('a@node-1');
    expect([...names.slice(k), ...names.slice(0, k)]).toEqual(['a@node-1', 'b@node-1', 'c@node-1']);
    expect(err.message).toMatch(/^dependency cycle \(each runs before the next\): /);
  });

  it('reports a cycle that crosses nodes', () => {
    const err = errorOf(() =>
      plan(
        `
- {id: a, type: shell, roles: [x], cross-depends: [{name: b, role: [y]}], parameters: {cmd: x}}
- {id: b, type: shell, roles: [y], cross-depends: [{name: a, role: [x]}], parameters: {cmd: x}}
`,
        [node('n1', 'x'), node('n2', 'y')],
      ),
    ) as PlanCycleError;
    expect(err.cycle.slice(0, 2).sort()).toEqual(['a@n1', 'b@n2']);
  });
});

describe('buildPlan - subgraphs', () => {
  const yaml = `
- {id: hiera, type: shell, roles: '*', parameters: {cmd: x}}
- {id: netconfig, type: shell, roles: '*', requires: [hiera], parameters: {cmd: x}}
- {id: galera, type: shell, roles: [controller], requires: [netconfig], parameters: {cmd: x}}
- {id: keystone, type: shell, roles: [controller], requires: [galera], parameters: {cmd: x}}
- {id: nova, type: shell, roles: [compute], requires: [netconfig], parameters: {cmd: x}}
`;
  const nodes = [node('1', 'controller'), node('2', 'compute')];
  const tasksIn = (p: Plan): string[] =>
    [
      ...new Set(
        planInstances(p)
          .filter((i) => i.node !== 'sync')
          .map((i) => `${i.task}@${i.node}`),
      ),
    ].sort();

  it('--start keeps the task and everything after it', () => {
    expect(tasksIn(plan(yaml, nodes, { start: 'galera' }))).toEqual(['galera@1', 'keystone@1']);
  });

  it('--end keeps the task and everything it needs', () => {
    expect(tasksIn(plan(yaml, nodes, { end: 'galera' }))).toEqual(['galera@1', 'hiera@1', 'netconfig@1']);
  });

  it('--start and --end keep their intersection', () => {
    expect(tasksIn(plan(yaml, nodes, { start: 'netconfig', end: 'galera' }))).toEqual(['galera@1', 'netconfig@1']);
  });

  it('--skip marks tasks skipped and keeps their edges', () => {
    const i = byName(plan(yaml, nodes, { skip: ['netconfig'] }));
    expect([i.get('netconfig@2')?.skip_reason, i.get('nova@2')?.requires]).toEqual(['filter', ['netconfig@2']]);
  });

  it('--only marks everything else skipped', () => {
    const p = plan(yaml, nodes, { only: ['nova', 'hiera'] });
    const running = planInstances(p)
      .filter((i) => i.node !== 'sync' && !i.skipped)
      .map((i) => `${i.task}@${i.node}`)
      .sort();
    expect(running).toEqual(['hiera@1', 'hiera@2', 'nova@2']);
  });

  it('--node plans only the given nodes', () => {
    expect(tasksIn(plan(yaml, nodes, { nodes: ['2'] }))).toEqual(['hiera@2', 'netconfig@2', 'nova@2']);
  });

  it('rejects unknown ids and node uids in filters', () => {
    const err = errorOf(() => plan(yaml, nodes, { start: 'nope', skip: ['x'], nodes: ['9'] }));
    expect(err.message.split('\n')).toEqual([
      '--start nope: no task has this id',
      '--skip x: no task has this id',
      '--node 9: no node has this uid',
    ]);
  });

  it('rejects a start task that runs on none of the planned nodes', () => {
    expect(errorOf(() => plan(yaml, nodes, { start: 'nova', nodes: ['1'] })).message).toBe(
      '--start nova: the task runs on none of the planned nodes',
    );
  });
});

describe('buildPlan - strategies and groups', () => {
  it('limits how many nodes run a task at once with its own strategy', () => {
    const p = plan(
      `
- {id: migrate, type: shell, roles: '*', parameters: {cmd: x, strategy: {type: one_by_one}}}
- {id: restart, type: shell, roles: '*', parameters: {cmd: x, strategy: {type: parallel, amount: 2}}}
`,
      [node('1', 'x'), node('2', 'x'), node('3', 'x')],
    );
    expect(p.concurrency).toEqual({ migrate: 1, restart: 2 });
    const sim = simulatePlan(p);
    const maxParallel = (task: string): number => {
      const runs = sim.timeline.filter((e) => e.task === task);
      return Math.max(...runs.map((r) => runs.filter((o) => o.start <= r.start && r.start < o.end).length));
    };
    expect(
      sim.timeline
        .filter((e) => e.task === 'migrate')
        .map((e) => e.start)
        .sort(),
    ).toEqual([0, 1, 2]);
    expect([maxParallel('migrate'), maxParallel('restart')]).toEqual([1, 2]);
    // One migrate at a time takes 3 units; restarts fill the other nodes meanwhile.
    expect(sim.makespan).toBe(3);
  });

  it('puts a task of a multi-role node into the first group only', () => {
    const p = plan(
      `
- {id: controller, type: group, roles: [controller]}
- {id: cinder, type: group, roles: [cinder], requires: [controller]}
- {id: t, type: shell, roles: [controller, cinder], parameters: {cmd: x}}
`,
      [node('1', 'controller', 'cinder')],
    );
    const i = byName(p);
    expect(i.get('controller@1')?.requires).toEqual(['t@1']);
    expect(i.get('cinder@1')?.requires).toEqual(['cinder:start@sync']);
  });

  it('runs the tasks a node role lists (node_roles tasks) on that role', () => {
    const roles = assertNoErrors(
      parseTaskFile('storage:\n  name: Storage\n  tasks: [format-disks]\n', 'node_roles.yaml'),
    );
    const tasks = tasksOf('- {id: format-disks, type: shell, parameters: {cmd: mkfs}}');
    const p = buildPlan({ tasks: [...roles, ...tasks], nodes: [node('1', 'storage'), node('2', 'compute')] });
    expect([...byName(p).keys()].filter((k) => k.startsWith('format-disks'))).toEqual(['format-disks@1']);
  });

  it('resolves group fault tolerance against the group size', () => {
    const p = plan('- {id: compute, type: group, roles: [compute], fault_tolerance: "50%"}', [
      node('1', 'compute'),
      node('2', 'compute'),
      node('3', 'compute'),
    ]);
    expect(p.groups).toEqual([{ id: 'compute', nodes: ['1', '2', '3'], faultTolerance: 1 }]);
  });
});

describe('mergeTaskLayers', () => {
  const release = tasksOf(
    '- {id: a, type: shell, roles: "*", parameters: {cmd: release}}\n- {id: b, type: shell, roles: "*", parameters: {cmd: release}}',
    'release.yaml',
  );
  const pluginX = tasksOf(
    '- {id: a, type: shell, roles: "*", parameters: {cmd: plugin}}\n- {id: c, type: shell, roles: "*", parameters: {cmd: plugin}}',
    'x/deployment_tasks.yaml',
    'x',
  );
  const cluster = tasksOf('- {id: a, type: shell, roles: "*", parameters: {cmd: cluster}}', 'cluster.yaml');

  it('lets cluster beat plugin beat release for the same id', () => {
    const merged = mergeTaskLayers({ release, plugins: [{ name: 'x', tasks: pluginX }], cluster });
    expect(merged.tasks.map((t) => [t.id, t.parameters.cmd, t.source.layer])).toEqual([
      ['a', 'cluster', 'cluster'],
      ['b', 'release', 'release'],
      ['c', 'plugin', 'plugin'],
    ]);
  });

  it('refuses two plugins defining one id, naming both', () => {
    const pluginY = tasksOf('- {id: c, type: shell, roles: "*", parameters: {cmd: y}}', 'y/deployment_tasks.yaml', 'y');
    const merged = mergeTaskLayers({
      release,
      plugins: [
        { name: 'x', tasks: pluginX },
        { name: 'y', tasks: pluginY },
      ],
    });
    expect(merged.diagnostics.map((d) => d.message)).toEqual([
      "task 'c' is defined by two plugins: 'x' (x/deployment_tasks.yaml:2) and 'y' (y/deployment_tasks.yaml:1)",
    ]);
  });
});

describe('instance names', () => {
  it('are task@node', () => {
    const p = plan('- {id: a, type: shell, roles: "*", parameters: {cmd: x}}', [node('n', 'x')]);
    const i = planInstances(p).findIndex((x) => x.task === 'a');
    expect(instanceName(p, p.order[i])).toBe('a@n');
  });
});

describe('writePlanJson', () => {
  it('prints exactly the records instanceAt gives, in execution order', () => {
    const p = buildPlan({
      tasks: assertNoErrors(parseTaskFile(SEED_002_GROUPS, 'deployment_tasks.yaml', { plugin: 'seed' })),
      nodes: SEED_002_NODES,
      cluster: { status: 'new', settings: {} },
      filters: { skip: ['setup_services'] },
    });
    (p.tasks.find((t) => t.id === 'setup_network') as TaskDefinition).failOnError = false;
    let text = '';
    writePlanJson(p, (chunk) => (text += chunk), 3);
    const parsed = JSON.parse(text);
    expect(parsed.instances).toEqual(planInstances(p));
    expect(parsed.groups).toEqual(p.groups);
    expect(parsed.instances.some((i: PlanInstance) => i.skip_reason === 'filter' && i.plugin === 'seed')).toBe(true);
    expect(
      parsed.instances.filter((i: PlanInstance) => i.fail_on_error === false).map((i: PlanInstance) => i.task),
    ).toEqual(Array(8).fill('setup_network'));
  });
});
