import { formatDiagnostic } from '@granule/core';
import { matchesNode } from './role-selector';
import { assertNoErrors, mergeParseResults, parseTaskFile } from './task-file-parser';
import { NodeSpec, RoleSelector, TaskDefinition } from './types';

// Seed 002 (granular deployment), "Usage of graph in nailgun": the groups, then the tasks for
// each role, and the pre/post_deployment examples; copied as written (typos included:
// `primar-controller`, `puppet_manifests`).
const GROUPS = `
- id: deploy
  type: stage
- id: primary-controller
  type: group
  role: [primar-controller]
  required_for: [deploy]
  parameters:
    strategy:
      type: one_by_one
- id: controller
  type: group
  role: [controller]
  requires: [primary-controller]
  required_for: [deploy]
  parameters:
    strategy:
      type: parallel
      amount: 2
- id: cinder
  type: group
  role: [cinder]
  requires: [controller]
  required_for: [deploy]
  parameters:
    strategy:
      type: parallel
- id: compute
  type: group
  role: [compute]
  requires: [controller]
  required_for: [deploy]
  parameters:
    strategy:
      type: parallel
- id: network
  type: group
  role: [network]
  requires: [controller]
  required_for: [compute, deploy]
  parameters:
    strategy:
      type: parallel
`;

const TASKS = `
- id: setup_services
  type: puppet
  requires: [setup_network]
  groups: [controller, primary-controller, compute, network, cinder]
  required_for: [deploy]
  parameters:
    puppet_manifests: /etc/puppet/manifests/controller.pp
    puppet_modules: /etc/puppet/modules
    timeout: 360
- id: setup_network
  type: shell
  groups: [controller, primary-controller, compute, network, cinder]
  required_for: [deploy]
  parameters:
    cmd: run_setup_network.sh
    timeout: 120
`;

const PRE_POST = `
- id: update_hosts
  type: puppet
  role: '*'
  stage: post_deployment
  requires: [upload_nodes_info]
  parameters:
    puppet_manifest: /etc/pupppet/modules/update_hosts_file.pp
    puppet_modules: /etc/puppet/modules
    timeout: 3600
    cwd: /
- id: rsync_puppet
  type: rsync
  role: '*'
  stage: pre_deployment
  parameters:
    src: /etc/pupppet/{VERSION}
    dst: /etc/puppet/modules
    timeout: 3600
`;

describe('seed 002 granular deployment example', () => {
  const task = (id: string): TaskDefinition => {
    const found = merged.tasks.find((t) => t.id === id);
    if (!found) throw new Error(`no task ${id}`);
    return found;
  };
  const selected = (roles: RoleSelector | null, nodes: NodeSpec[]): string[] =>
    roles ? nodes.filter((n) => matchesNode(roles, n)).map((n) => n.uid) : [];
  const merged = mergeParseResults([
    parseTaskFile(GROUPS, 'release/groups.yaml'),
    parseTaskFile(TASKS, 'release/tasks/deployment_tasks.yaml'),
    parseTaskFile(PRE_POST, 'release/pre_post.yaml'),
  ]);

  it('parses with one warning: puppet_manifests is the deprecated spelling', () => {
    expect(merged.diagnostics.map(formatDiagnostic)).toEqual([
      "release/tasks/deployment_tasks.yaml:8: [0].parameters.puppet_manifests: task 'setup_services': parameters.puppet_manifests is read as puppet_manifest; rename it",
    ]);
    expect(assertNoErrors(merged).map((t) => `${t.id}:${t.type}`)).toEqual([
      'deploy:stage',
      'primary-controller:group',
      'controller:group',
      'cinder:group',
      'compute:group',
      'network:group',
      'setup_services:puppet',
      'setup_network:shell',
      'update_hosts:puppet',
      'rsync_puppet:sync',
    ]);
  });

  it('groups - strategies and dependencies as written', () => {
    const groups = merged.tasks.filter((t) => t.type === 'group');
    expect(groups.map((g) => [g.id, g.strategy, g.requires, g.requiredFor])).toEqual([
      ['primary-controller', { type: 'one_by_one' }, [], ['deploy']],
      ['controller', { type: 'parallel', amount: 2 }, ['primary-controller'], ['deploy']],
      ['cinder', { type: 'parallel' }, ['controller'], ['deploy']],
      ['compute', { type: 'parallel' }, ['controller'], ['deploy']],
      ['network', { type: 'parallel' }, ['controller'], ['compute', 'deploy']],
    ]);
    expect(groups.every((g) => Object.keys(g.parameters).length === 0)).toBe(true);
  });

  it('tasks - groups select the nodes of those roles (seed 002 node list)', () => {
    const nodes: NodeSpec[] = [
      { uid: 'node-1', roles: ['primary-controller'] },
      { uid: 'node-4', roles: ['controller'] },
      { uid: 'node-6', roles: ['cinder'] },
      { uid: 'node-9', roles: ['mongo'] },
      { uid: 'master', roles: [] },
    ];
    expect(selected(task('setup_network').roles, nodes)).toEqual(['node-1', 'node-4', 'node-6']);
    // '*' is the cluster's nodes; the master host is not one of them.
    expect(selected(task('update_hosts').roles, nodes)).toEqual(['node-1', 'node-4', 'node-6', 'node-9']);
  });

  it('pre/post tasks - stages with priority 0, rsync read as sync', () => {
    expect(task('update_hosts').stage).toEqual({ name: 'post_deployment', priority: 0, raw: 'post_deployment' });
    expect(task('rsync_puppet').stage).toEqual({ name: 'pre_deployment', priority: 0, raw: 'pre_deployment' });
    expect(task('rsync_puppet').parameters).toEqual({
      src: '/etc/pupppet/{VERSION}',
      dst: '/etc/puppet/modules',
      timeout: 3600,
    });
    expect(task('setup_services').parameters).toEqual({
      puppet_manifest: '/etc/puppet/manifests/controller.pp',
      puppet_modules: '/etc/puppet/modules',
      timeout: 360,
    });
  });
});
