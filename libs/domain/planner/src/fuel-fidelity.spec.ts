import { assertNoErrors, parseTaskFile } from '@granule/task-model';
import type { NodeSpec } from '@granule/task-model';
import { buildPlan } from './build-plan';
import { planInstances } from './plan-output';
import type { Plan, PlanInstance } from './plan-types';

// Fuel's own unit tests, restated for Granule's planner (issue 25, ADR 0013). Each describe
// names the Fuel code and test it follows; the data are ours.

const node = (uid: string, ...roles: string[]): NodeSpec => ({ uid, roles });
const plan = (yaml: string, nodes: NodeSpec[]): Plan =>
  buildPlan({ tasks: assertNoErrors(parseTaskFile(yaml, 'deployment_tasks.yaml')), nodes });
const byName = (p: Plan): Map<string, PlanInstance> => new Map(planInstances(p).map((i) => [`${i.task}@${i.node}`, i]));
const nodesOf = (p: Plan, task: string): string[] =>
  planInstances(p)
    .filter((i) => i.task === task)
    .map((i) => i.node)
    .sort();

describe('pre/post tasks stay in their stage (fuel-web nailgun/orchestrator/legacy_tasks_adapter.py; test_legacy_tasks_adapter.py, test_legacy_deployment_task_adaptation)', () => {
  // Two tasks between pre_deployment_start and pre_deployment_end and one between the
  // post_deployment bounds, all with the role of group `storage`, plus one ordinary task.
  const yaml = `
- {id: storage, type: group, roles: [storage], requires: [deploy_start], required_for: [deploy_end]}
- {id: wipe-cache, type: shell, version: 2.0.0, roles: [storage], requires: [pre_deployment_start], required_for: [pre_deployment_end], parameters: {cmd: x}}
- {id: fetch-keys, type: shell, version: 2.0.0, roles: [storage], requires: [wipe-cache], required_for: [pre_deployment_end], parameters: {cmd: x}}
- {id: report, type: shell, version: 2.0.0, roles: [storage], requires: [post_deployment_start], required_for: [post_deployment_end], parameters: {cmd: x}}
- {id: format-disks, type: shell, version: 2.0.0, roles: [storage], parameters: {cmd: x}}
`;
  const nodes = [node('s1', 'storage'), node('s2', 'storage')];

  it('plans where putting them in the group made a cycle (deploy_start -> storage:start -> wipe-cache -> pre_deployment_end)', () => {
    expect(() => plan(yaml, nodes)).not.toThrow();
  });

  it('binds them to their stage: they follow its start, its end waits for them, the group never waits for them', () => {
    const i = byName(plan(yaml, nodes));
    expect(i.get('wipe-cache@s1')?.requires).toEqual(['pre_deployment_start@sync']);
    expect(i.get('fetch-keys@s1')?.requires).toEqual(['wipe-cache@s1']);
    expect(i.get('pre_deployment_end@sync')?.requires.sort()).toEqual([
      'fetch-keys@s1',
      'fetch-keys@s2',
      'pre_deployment_start@sync',
      'wipe-cache@s1',
      'wipe-cache@s2',
    ]);
    expect(i.get('report@s2')?.requires).toEqual(['post_deployment_start@sync']);
    expect([i.get('wipe-cache@s1')?.stage, i.get('report@s1')?.stage]).toEqual(['pre_deployment', 'post_deployment']);
    // The ordinary task is the group's only member on each node.
    expect(i.get('storage@s1')?.requires).toEqual(['format-disks@s1']);
    expect(i.get('format-disks@s1')?.requires).toEqual(['storage:start@sync']);
  });

  it('keeps a task that starts after pre_deployment_start but ends elsewhere in its group (it is not between the bounds)', () => {
    const p = plan(
      `
- {id: storage, type: group, roles: [storage], requires: [deploy_start], required_for: [deploy_end]}
- {id: late, type: shell, version: 2.0.0, roles: [storage], requires: [pre_deployment_start], required_for: [deploy_end], parameters: {cmd: x}}
`,
      [node('s1', 'storage')],
    );
    expect(byName(p).get('storage@s1')?.requires).toEqual(['late@s1']);
  });
});

describe('master inside a role list (fuel-web nailgun/utils/resolvers.py; test_role_resolver.py, test_resolve_master)', () => {
  it('runs `roles: [master, controller]` on the master host and on the controllers, with no master-only task', () => {
    const p = plan('- {id: collect-logs, type: shell, roles: [master, controller], parameters: {cmd: x}}', [
      node('c1', 'controller'),
      node('k1', 'compute'),
      node('c2', 'controller'),
    ]);
    expect(nodesOf(p, 'collect-logs')).toEqual(['c1', 'c2', 'master']);
  });

  it('runs `roles: master` on the master host only', () => {
    const p = plan('- {id: backup-db, type: shell, roles: master, parameters: {cmd: x}}', [node('c1', 'controller')]);
    expect(nodesOf(p, 'backup-db')).toEqual(['master']);
  });
});

describe("'*' and the master host (fuel-web nailgun/utils/resolvers.py; test_role_resolver.py, test_resolve_all)", () => {
  const yaml = `
- {id: keys, type: shell, roles: master, parameters: {cmd: x}}
- {id: hosts-file, type: shell, roles: '*', parameters: {cmd: x}}
- {id: both, type: shell, roles: ['*', master], parameters: {cmd: x}}
- {id: wait-all, type: shell, roles: [compute], cross-depends: [{name: /^(keys|hosts-file)$/}], parameters: {cmd: x}}
`;
  const p = plan(yaml, [node('c1', 'controller'), node('k1', 'compute')]);

  it("runs '*' tasks on the deployment's nodes only, even when the master host is in the plan", () => {
    expect(nodesOf(p, 'keys')).toEqual(['master']);
    expect(nodesOf(p, 'hosts-file')).toEqual(['c1', 'k1']);
  });

  it("runs ['*', master] on every node and on the master host", () => {
    expect(nodesOf(p, 'both')).toEqual(['c1', 'k1', 'master']);
  });

  it('reads an omitted cross-depends role as Fuel does, as `*`: the master host is not searched', () => {
    expect(byName(p).get('wait-all@k1')?.requires.sort()).toEqual(['hosts-file@c1', 'hosts-file@k1']);
  });
});

describe('cross-dependencies with policy any (fuel-web nailgun/lcm/transaction_serializer.py, expand_cross_dependencies; test_lcm_transaction_serializer.py, test_expand_cross_dependencies; test_role_resolver.py, test_resolve_any)', () => {
  const nodes = [
    node('c1', 'controller'),
    node('c2', 'controller'),
    node('c3', 'controller'),
    node('k1', 'compute'),
    node('k2', 'compute'),
  ];

  it('cross-depended-by resolves the role to one node: the first controller waits for every compute, the others for none', () => {
    const p = plan(
      `
- id: enable-service
  type: shell
  roles: [compute]
  cross-depended-by: [{name: discover-hosts, role: [controller], policy: any}]
  parameters: {cmd: x}
- {id: discover-hosts, type: shell, roles: [controller], parameters: {cmd: x}}
`,
      nodes,
    );
    const i = byName(p);
    expect(i.get('discover-hosts@c1')?.requires.sort()).toEqual(['enable-service@k1', 'enable-service@k2']);
    expect([i.get('discover-hosts@c2')?.requires, i.get('discover-hosts@c3')?.requires]).toEqual([[], []]);
  });

  it('picks the first selected node that runs the named task', () => {
    const p = plan(
      `
- {id: enable-service, type: shell, roles: [compute], cross-depended-by: [{name: discover-hosts, role: [controller], policy: any}], parameters: {cmd: x}}
- {id: discover-hosts, type: shell, roles: [/^ctl-b$/], parameters: {cmd: x}}
`,
      [node('c1', 'controller'), node('c2', 'controller', 'ctl-b'), node('k1', 'compute')],
    );
    expect(byName(p).get('discover-hosts@c2')?.requires).toEqual(['enable-service@k1']);
  });

  it('cross-depends waits for every named task on one of the selected nodes, not for any single one of them', () => {
    const p = plan(
      `
- {id: db-a, type: shell, roles: [controller], parameters: {cmd: x}}
- {id: db-b, type: shell, roles: [controller], parameters: {cmd: x}}
- {id: client, type: shell, roles: [compute], cross-depends: [{name: /^db-/, role: [controller], policy: any}], parameters: {cmd: x}}
`,
      nodes,
    );
    const i = byName(p);
    const barrier = i.get(i.get('client@k1')?.requires[0] as string) as PlanInstance;
    expect(barrier.requires_any).toHaveLength(1);
    const perNode = (barrier.requires_any as string[][])[0].map((name) => i.get(name)?.requires.sort());
    expect(perNode).toEqual([
      ['db-a@c1', 'db-b@c1'],
      ['db-a@c2', 'db-b@c2'],
      ['db-a@c3', 'db-b@c3'],
    ]);
  });

  it("with role self, waits for the named tasks on the instance's own node whatever the policy", () => {
    const p = plan(
      `
- {id: db-a, type: shell, roles: '*', parameters: {cmd: x}}
- {id: db-b, type: shell, roles: '*', parameters: {cmd: x}}
- {id: client, type: shell, roles: '*', cross-depends: [{name: /^db-/, role: self, policy: any}], parameters: {cmd: x}}
`,
      [node('k1', 'compute')],
    );
    expect(byName(p).get('client@k1')?.requires.sort()).toEqual(['db-a@k1', 'db-b@k1']);
  });
});

describe('default fault tolerance (fuel-web nailgun/lcm/transaction_serializer.py, calculate_fault_tolerance; test_lcm_transaction_serializer.py, test_tasks_expand_groups)', () => {
  it('gives a group without fault_tolerance one more than its nodes; explicit values as written', () => {
    const p = plan(
      `
- {id: edge, type: group, roles: [edge]}
- {id: controller, type: group, roles: [controller], fault_tolerance: '0%'}
- {id: storage, type: group, roles: [storage], fault_tolerance: '100%'}
`,
      [node('e1', 'edge'), node('e2', 'edge'), node('e3', 'edge'), node('c1', 'controller'), node('s1', 'storage')],
    );
    expect(p.groups.map((g) => [g.id, g.nodes.length, g.faultTolerance])).toEqual([
      ['edge', 3, 4],
      ['controller', 1, 0],
      ['storage', 1, 1],
    ]);
  });
});
