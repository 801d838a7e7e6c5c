import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { mergeParseResults, parseNodesFile, parseTaskFile } from '@granule/task-model';
import { buildPlan } from './build-plan';
import { planInstances } from './plan-output';
import type { PlanInstance } from './plan-types';
import { simulatePlan } from './simulate-plan';

// examples/fuel-library: a release shaped like fuel-library's granular graph (the usual stages;
// groups primary-controller, controller, compute and ceph-osd; pre/post tasks such as
// clear_nodes_info and upload_configuration; master tasks; cross-depends across groups).
const DIR = path.resolve(__dirname, '../../../../examples/fuel-library');
const files = readdirSync(path.join(DIR, 'tasks')).sort();
const parsed = mergeParseResults(
  files.map((f) => parseTaskFile(readFileSync(path.join(DIR, 'tasks', f), 'utf8'), `tasks/${f}`)),
);
const nodesFile = parseNodesFile(readFileSync(path.join(DIR, 'nodes.yaml'), 'utf8'), 'nodes.yaml');

describe('a fuel-library-shaped release plans in Fuel’s order (examples/fuel-library)', () => {
  const plan = buildPlan({ tasks: parsed.tasks, nodes: nodesFile.nodes });
  const instances = planInstances(plan);
  const byName = new Map(instances.map((i) => [`${i.task}@${i.node}`, i]));
  const sim = simulatePlan(plan);
  const run = new Map(sim.timeline.map((e) => [`${e.task}@${e.node}`, e]));
  const onNode = (uid: string): string[] => sim.timeline.filter((e) => e.node === uid).map((e) => e.task);
  const work = instances.filter((i) => i.node !== 'sync' && i.type !== 'group');
  const inStage = (stage: PlanInstance['stage']): string[] =>
    work.filter((i) => i.stage === stage).map((i) => `${i.task}@${i.node}`);
  const start = (key: string): number => run.get(key)?.start ?? NaN;
  const end = (key: string): number => run.get(key)?.end ?? NaN;

  it('reads without a problem and plans every task on the nodes Fuel would pick', () => {
    expect([parsed.diagnostics, nodesFile.diagnostics]).toEqual([[], []]);
    const nodesOf = (task: string): string[] => work.filter((i) => i.task === task).map((i) => i.node);
    expect(nodesOf('generate_keys')).toEqual(['master']);
    expect(nodesOf('sync_time').sort()).toEqual([
      'master',
      'node-1',
      'node-2',
      'node-3',
      'node-4',
      'node-5',
      'node-6',
      'node-7',
    ]);
    expect(nodesOf('clear_nodes_info')).not.toContain('master');
    expect(nodesOf('update_hosts')).not.toContain('master');
    expect(nodesOf('primary-database')).toEqual(['node-1']);
    expect(nodesOf('top-role-ceph-osd')).toEqual(['node-6', 'node-7']);
  });

  it('runs every pre-deployment task before any deployment task, and every deployment task before any post task', () => {
    const latest = (keys: string[]): number => Math.max(...keys.map(end));
    const earliest = (keys: string[]): number => Math.min(...keys.map(start));
    // Five pre tasks on each of the seven nodes, plus generate_keys and sync_time on the master host.
    expect(inStage('pre_deployment')).toHaveLength(5 * 7 + 2);
    expect(latest(inStage('pre_deployment'))).toBeLessThanOrEqual(earliest(inStage('deployment')));
    expect(latest(inStage('deployment'))).toBeLessThanOrEqual(earliest(inStage('post_deployment')));
  });

  it('keeps clear_nodes_info and the other pre tasks out of the groups they share roles with', () => {
    expect(byName.get('clear_nodes_info@node-1')?.requires).toEqual(['pre_deployment_start@sync']);
    expect(byName.get('primary-controller@node-1')?.requires.sort()).toEqual([
      'primary-ceph-mon@node-1',
      'primary-keystone@node-1',
    ]);
    expect(byName.get('hiera@node-1')?.requires.sort()).toEqual(['deploy_start@sync', 'primary-controller:start@sync']);
  });

  it('deploys the groups in order: the primary controller, then the controllers, then compute and ceph-osd side by side', () => {
    const groupSpan = (uids: string[]): [number, number] => {
      const keys = work
        .filter((i) => i.stage === 'deployment' && uids.includes(i.node))
        .map((i) => `${i.task}@${i.node}`);
      return [Math.min(...keys.map(start)), Math.max(...keys.map(end))];
    };
    const [, primaryEnd] = groupSpan(['node-1']);
    const [controllersStart, controllersEnd] = groupSpan(['node-2', 'node-3']);
    const [computeStart] = groupSpan(['node-4', 'node-5']);
    const [cephStart] = groupSpan(['node-6', 'node-7']);
    expect(controllersStart).toBeGreaterThanOrEqual(primaryEnd);
    expect([computeStart, cephStart].every((t) => t >= controllersEnd)).toBe(true);
    expect(computeStart).toBe(cephStart);
    expect(byName.get('compute:start@sync')?.requires).toEqual(['controller:end@sync']);
  });

  it('follows cross-depends across groups and to the master host', () => {
    expect(byName.get('database@node-2')?.requires.sort()).toEqual(['netconfig@node-2', 'primary-database@node-1']);
    expect(byName.get('copy_keys@node-5')?.requires.sort()).toEqual([
      'clear_nodes_info@node-5',
      'generate_keys@master',
    ]);
    const osd = byName.get('top-role-ceph-osd@node-6') as PlanInstance;
    expect(osd.requires.sort()).toEqual([
      'ceph-mon@node-2',
      'ceph-mon@node-3',
      'netconfig@node-6',
      'primary-ceph-mon@node-1',
    ]);
    // policy any: ceph-compute needs the OSD role done on one ceph-osd node.
    expect(byName.get('ceph-compute:cross-depends[0]@sync')?.requires_any).toEqual([
      ['top-role-ceph-osd@node-6', 'top-role-ceph-osd@node-7'],
    ]);
  });

  it('lets one controller discover the compute hosts once every compute enabled its service (cross-depended-by, policy any)', () => {
    expect(byName.get('nova-host-discovery@node-1')?.requires.sort()).toEqual([
      'enable_nova_compute_service@node-4',
      'enable_nova_compute_service@node-5',
      'update_hosts@node-1',
    ]);
    expect(byName.get('nova-host-discovery@node-2')?.requires).toEqual(['update_hosts@node-2']);
  });

  it('tolerates any number of failed ceph-osd nodes, the group stating no fault_tolerance', () => {
    expect(plan.groups.map((g) => [g.id, g.faultTolerance])).toEqual([
      ['primary-controller', 0],
      ['controller', 0],
      ['compute', 0],
      ['ceph-osd', 3],
    ]);
  });

  it('starts tasks on each node in this order (simulated, one unit per task)', () => {
    const pre = ['clear_nodes_info', 'sync_time', 'upload_configuration', 'copy_keys', 'upload_nodes_info'];
    const base = ['hiera', 'globals', 'netconfig'];
    expect(onNode('master')).toEqual(['generate_keys', 'sync_time', 'generate_deleted_nodes']);
    expect(onNode('node-1')).toEqual([
      ...pre,
      ...base,
      'primary-database',
      'primary-ceph-mon',
      'primary-keystone',
      'update_hosts',
      'nova-host-discovery',
      'upload_cirros',
    ]);
    expect(onNode('node-2')).toEqual([
      ...pre,
      ...base,
      'database',
      'ceph-mon',
      'keystone',
      'update_hosts',
      'nova-host-discovery',
    ]);
    expect(onNode('node-4')).toEqual([
      ...pre,
      ...base,
      'top-role-compute',
      'ceph-compute',
      'update_hosts',
      'enable_nova_compute_service',
    ]);
    expect(onNode('node-7')).toEqual([...pre, ...base, 'top-role-ceph-osd', 'update_hosts']);
  });
});
