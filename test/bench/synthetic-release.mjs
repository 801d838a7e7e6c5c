// Builds a synthetic release of about 300 tasks (groups, stages with postfixes, fan-in,
// cross-depends) and NODES files, deterministically (seeded PRNG), for benchmarks.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';

function prng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

// `everyNode: true` puts every deploy task on every node (roles '*'): ~300 instances per node.
export function writeSyntheticRelease(dir, { taskCount = 300, seed = 42, everyNode = false } = {}) {
  mkdirSync(dir, { recursive: true });
  const rand = prng(seed);
  const pick = (list) => list[Math.floor(rand() * list.length)];
  const roles = ['primary-controller', 'controller', 'compute', 'storage'];
  const groups = [
    {
      id: 'primary-controller',
      type: 'group',
      roles: ['primary-controller'],
      requires: ['deploy_start'],
      required_for: ['deploy_end'],
      parameters: { strategy: { type: 'one_by_one' } },
    },
    {
      id: 'controller',
      type: 'group',
      roles: ['controller'],
      requires: ['primary-controller'],
      required_for: ['deploy_end'],
      parameters: { strategy: { type: 'parallel', amount: 2 } },
    },
    {
      id: 'storage',
      type: 'group',
      roles: ['storage'],
      requires: ['controller'],
      required_for: ['deploy_end'],
      fault_tolerance: '10%',
      parameters: { strategy: { type: 'parallel', amount: 20 } },
    },
    {
      id: 'compute',
      type: 'group',
      roles: ['compute'],
      requires: ['controller'],
      required_for: ['deploy_end'],
      fault_tolerance: '5%',
      parameters: { strategy: { type: 'parallel', amount: 100 } },
    },
  ];
  const staged = [];
  for (let i = 0; i < 40; i++) {
    const stage = i < 20 ? 'pre_deployment' : 'post_deployment';
    staged.push({
      id: `${stage}-hook-${i}`,
      type: 'shell',
      version: '2.0.0',
      roles: i % 3 === 0 ? '*' : [pick(roles)],
      stage: `${stage}/${Math.floor(rand() * 9000) - 1000}`,
      parameters: { cmd: `echo hook ${i}`, timeout: 60 },
    });
  }
  const deploy = [];
  const deployCount = taskCount - groups.length - staged.length;
  for (let i = 0; i < deployCount; i++) {
    const r = rand();
    const taskRoles = everyNode
      ? '*'
      : r < 0.3
        ? '*'
        : r < 0.55
          ? ['primary-controller', 'controller']
          : r < 0.8
            ? ['compute']
            : r < 0.9
              ? ['storage']
              : [pick(roles), pick(roles)];
    const requires = [];
    const fanIn = i === 0 ? 0 : 1 + Math.floor(rand() * 3);
    for (let k = 0; k < fanIn; k++) requires.push(`task-${Math.max(0, i - 1 - Math.floor(rand() * 12))}`);
    const task = {
      id: `task-${i}`,
      type: rand() < 0.3 ? 'puppet' : 'shell',
      version: '2.0.0',
      roles: taskRoles,
      requires: [...new Set(requires)],
    };
    if (task.type === 'puppet')
      task.parameters = {
        puppet_manifest: `/etc/puppet/modules/m${i}/site.pp`,
        puppet_modules: '/etc/puppet/modules',
        timeout: 3600,
      };
    else task.parameters = { cmd: `echo task ${i}`, timeout: 300 };
    // Later groups wait for controller work, as real releases do (the other way round is a cycle).
    const onComputeOrStorage =
      Array.isArray(taskRoles) && taskRoles.every((role) => role === 'compute' || role === 'storage');
    if (i > 20 && onComputeOrStorage && rand() < 0.2)
      task['cross-depends'] = [{ name: `task-${Math.floor(rand() * 20)}`, role: ['primary-controller', 'controller'] }];
    if (rand() < 0.05) task.condition = "cluster:status == 'new' or settings:common.reapply.value == true";
    deploy.push(task);
  }
  writeFileSync(path.join(dir, 'deployment_tasks.yaml'), stringify([...groups, ...staged, ...deploy]));
  return groups.length + staged.length + deploy.length;
}

export function writeNodes(file, count) {
  const nodes = [];
  for (let i = 1; i <= count; i++) {
    const role = i === 1 ? 'primary-controller' : i <= 3 ? 'controller' : i % 20 === 0 ? 'storage' : 'compute';
    nodes.push({ uid: `node-${i}`, roles: [role], rack: `rack-${Math.ceil(i / 40)}` });
  }
  writeFileSync(file, stringify({ nodes }));
}
