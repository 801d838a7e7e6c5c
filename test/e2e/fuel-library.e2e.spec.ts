import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { orderViolations, workPredecessors, type PlannedInstance } from './plan-order';
import { E2eStack, REPO_ROOT, dataOf, keysOf, versionOf, type StoredEvent } from './stack';

// The fuel-library-shaped release (examples/fuel-library) on real agents: one node of each role
// plus an agent for the master host, deployed by the CLI with --tasks as an operator would
// bring a Fuel release, and installed as a release in config-store and deployed to an
// environment of it (issue 25, ADR 0013).
const FUEL = path.join(REPO_ROOT, 'examples/fuel-library');
const ARGS = ['--tasks', path.join(FUEL, 'tasks'), '--nodes', path.join(FUEL, 'nodes-small.yaml')];
const AGENTS = ['1', '2', '3', '4', 'master'];
const ROLE_OF: Record<string, string> = {
  '1': 'primary-controller',
  '2': 'controller',
  '3': 'compute',
  '4': 'ceph-osd',
};

interface Planned extends PlannedInstance {
  stage: 'pre_deployment' | 'deployment' | 'post_deployment';
}

describe('a fuel-library-shaped release on five agents (whole stack)', () => {
  let stack: E2eStack;
  let planned: Planned[];
  let events: StoredEvent[];

  const work = (): Planned[] => planned.filter((i) => i.node !== 'sync' && i.type !== 'group' && !i.skipped);
  const key = (i: PlannedInstance): string => `${i.task}@${i.node}`;
  const succeeded = (k: string): number => versionOf(events, 'TaskSucceeded', k);
  const dispatched = (k: string): number => versionOf(events, 'TaskDispatched', k);

  beforeAll(async () => {
    stack = await E2eStack.start({ name: 'fuel-library', agents: AGENTS });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  }, 60_000);

  it('plans without error and deploys: every task once, on the nodes Fuel picks, the master host included', async () => {
    const plan = await stack.granule(['plan', ...ARGS, '-o', 'json']);
    stack.assertExitedOk(plan, 'granule plan');
    planned = (JSON.parse(plan.stdout) as { instances: Planned[] }).instances;

    const r = await stack.granule(['deploy', ...ARGS, '--run-id', 'fuel-1', '--watch']);
    stack.assertExitedOk(r, 'granule deploy fuel-1');
    expect(r.stdout.split('\n')[0]).toBe('RECAP run fuel-1: succeeded');
    events = await stack.events('fuel-1');

    const keys = work().map(key).sort();
    expect(keysOf(events, 'TaskSucceeded').sort()).toEqual(keys);
    expect(keysOf(events, 'TaskDispatched').sort()).toEqual(keys);
    // Group markers (`G@node`) do no work: look through them like through sync points.
    const markersLookedThrough = planned.map((i) => (i.type === 'group' ? { ...i, skipped: true } : i));
    expect(orderViolations(events, workPredecessors(markersLookedThrough))).toEqual([]);
    const onMaster = work()
      .filter((i) => i.node === 'master')
      .map((i) => i.task)
      .sort();
    // generate_keys names master alone, sync_time lists it with the roles; '*' tasks stay off it.
    expect(onMaster).toEqual(['generate_deleted_nodes', 'generate_keys', 'sync_time']);
    expect(dataOf(events[events.length - 1], 'DeploymentSucceeded').failedNodes).toEqual([]);
  }, 150_000);

  it('ran the stages and the groups in Fuel’s order', () => {
    const ofStage = (stage: Planned['stage']): string[] =>
      work()
        .filter((i) => i.stage === stage)
        .map(key);
    const deploymentOn = (uid: string): string[] =>
      work()
        .filter((i) => i.stage === 'deployment' && i.node === uid)
        .map(key);
    const lastSuccess = (ks: string[]): number => Math.max(...ks.map(succeeded));
    const firstDispatch = (ks: string[]): number => Math.min(...ks.map(dispatched));
    // clear_nodes_info, upload_configuration, ... finished everywhere before deployment began.
    expect(ofStage('pre_deployment')).toContain('clear_nodes_info@4');
    expect(lastSuccess(ofStage('pre_deployment'))).toBeLessThan(firstDispatch(ofStage('deployment')));
    expect(lastSuccess(ofStage('deployment'))).toBeLessThan(firstDispatch(ofStage('post_deployment')));
    // primary-controller, then controller, then compute and ceph-osd.
    expect(lastSuccess(deploymentOn('1'))).toBeLessThan(firstDispatch(deploymentOn('2')));
    expect(lastSuccess(deploymentOn('2'))).toBeLessThan(firstDispatch([...deploymentOn('3'), ...deploymentOn('4')]));
    // cross-depends across groups and to the master host.
    expect(succeeded('primary-database@1')).toBeLessThan(dispatched('database@2'));
    expect(succeeded('generate_keys@master')).toBeLessThan(dispatched('copy_keys@3'));
    expect(succeeded('top-role-ceph-osd@4')).toBeLessThan(dispatched('ceph-compute@3'));
    // cross-depended-by with policy any: the first controller (node 1) discovers the compute host.
    expect(succeeded('enable_nova_compute_service@3')).toBeLessThan(dispatched('nova-host-discovery@1'));
  });

  it('the tasks had their effects on every node, in the order each node ran them', () => {
    const file = (uid: string, rel: string): string | undefined => {
      const p = path.join(stack.agentRoot(uid), 'state', rel);
      return existsSync(p) ? readFileSync(p, 'utf8') : undefined;
    };
    for (const uid of ['1', '2', '3', '4']) {
      const ran = (file(uid, 'fuel-library.log') ?? '').trim().split('\n');
      const inDispatchOrder = keysOf(events, 'TaskDispatched')
        .filter((k) => k.endsWith(`@${uid}`))
        .map((k) => k.slice(0, -uid.length - 1))
        .filter((task) => work().find((i) => i.task === task)?.type === 'shell');
      expect([ROLE_OF[uid], ran]).toEqual([ROLE_OF[uid], inDispatchOrder]);
      expect(file(uid, 'astute.yaml')).toBe('configuration: written by upload_configuration\n');
      expect(file(uid, 'nodes.yaml')).toBe('nodes: written by upload_nodes_info\n');
    }
    expect(file('master', 'fuel-library.log')?.trim().split('\n').sort()).toEqual([
      'generate_deleted_nodes',
      'generate_keys',
      'sync_time',
    ]);
    expect(file('master', 'astute.yaml')).toBeUndefined();
  });

  it('installed as a release: env create, node add with its roles, deploy --env runs the same tasks in the same order', async () => {
    await stack.service('config-store').start();
    const cli = async (...args: string[]): Promise<string> => {
      const r = await stack.granule(args);
      stack.assertExitedOk(r, `granule ${args.join(' ')}`);
      return r.stdout;
    };
    await cli('release', 'install', FUEL);
    expect(JSON.parse(await cli('release', 'list', '-o', 'json'))).toEqual([
      expect.objectContaining({ name: 'fuel-library', version: '1.0.0' }),
    ]);
    await cli('env', 'create', 'fuel', '--release', 'fuel-library');
    for (const [uid, role] of Object.entries(ROLE_OF))
      await cli('node', 'add', uid, '--hostname', `fuel-${uid}`, '--roles', role, '--env', 'fuel');
    const r = await stack.granule(['deploy', '--env', 'fuel', '--run-id', 'fuel-env', '--watch'], {
      timeoutMs: 140_000,
    });
    stack.assertExitedOk(r, 'granule deploy --env fuel');
    expect(r.stdout.split('\n')[0]).toBe('RECAP run fuel-env: succeeded');
    const run = await stack.events('fuel-env');
    // The same instances as the --tasks deploy of the same nodes, in an order the plan allows.
    expect(keysOf(run, 'TaskSucceeded').sort()).toEqual(work().map(key).sort());
    const markersLookedThrough = planned.map((i) => (i.type === 'group' ? { ...i, skipped: true } : i));
    expect(orderViolations(run, workPredecessors(markersLookedThrough))).toEqual([]);
    expect(
      keysOf(run, 'TaskSucceeded')
        .filter((k) => k.endsWith('@master'))
        .sort(),
    ).toEqual(['generate_deleted_nodes@master', 'generate_keys@master', 'sync_time@master']);
  }, 150_000);

  it('a failed ceph-osd node does not fail the run: the group states no fault_tolerance', async () => {
    // An environment override (CLUSTER.yaml tasks) makes the OSD role fail on its node.
    const cluster = path.join(stack.dir, 'osd-fails.yaml');
    writeFileSync(
      cluster,
      [
        'status: new',
        'settings: {}',
        'tasks:',
        '  - id: top-role-ceph-osd',
        '    type: shell',
        '    version: 2.1.0',
        '    groups: [ceph-osd]',
        '    requires: [netconfig]',
        '    required_for: [deploy_end]',
        '    parameters: {cmd: "echo osd fails on purpose >&2; exit 1", timeout: 30, retries: 0}',
        '',
      ].join('\n'),
    );
    const r = await stack.granule([
      'deploy',
      ...ARGS,
      '--cluster',
      cluster,
      '--node',
      '1,2,4',
      '--run-id',
      'fuel-osd',
      '--watch',
    ]);
    stack.assertExitedOk(r, 'granule deploy fuel-osd');
    const run = await stack.events('fuel-osd');
    expect(run.filter((e) => e.type === 'NodeFailed').map((e) => e.data)).toEqual([
      { node: '4', reason: 'task_failed', task: 'top-role-ceph-osd' },
    ]);
    expect(run.filter((e) => e.type === 'GroupToleranceExceeded' || e.type === 'DeploymentStopRequested')).toEqual([]);
    const last = run[run.length - 1];
    expect([last.type, dataOf(last, 'DeploymentSucceeded').failedNodes]).toEqual(['DeploymentSucceeded', ['4']]);
    // The controllers' deployment, which the OSD node does not gate, completed.
    expect(keysOf(run, 'TaskSucceeded')).toEqual(expect.arrayContaining(['primary-keystone@1', 'keystone@2']));
    expect(keysOf(run, 'TaskFailed')).toEqual(['top-role-ceph-osd@4']);
  }, 150_000);
});
