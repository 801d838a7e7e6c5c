import { MemoryPluginFiles } from './memory-plugin-files';
import { effectiveTree, loadPluginTasks } from './plugin-tasks';
import { loadPlugin, selectRelease } from './plugin-loader';
import { compareVersions, parseConstraint, parseVersion, satisfies } from './version-compare';
import { selectVariants } from './variant-selection';

const v = (s: string) => {
  const p = parseVersion(s);
  if (!p) throw new Error(s);
  return p;
};
const holds = (version: string, constraint: string): boolean => {
  const c = parseConstraint(constraint);
  if ('error' in c) throw new Error(c.error);
  return satisfies(v(version), c);
};

describe('version comparison rule', () => {
  it.each([
    ['liberty-8.0', 'mitaka-9.0', -1],
    ['mitaka-10.0', 'mitaka-9.0', 1],
    ['newton-10.0', 'mitaka-10.0', 1],
    ['zed-1.0', 'antelope-1.0', -1],
    ['2015.1', '2014.2', 1],
    ['2015.1-8.0', '2015.1', 0],
    ['liberty-8.0', '8.0', 0],
    ['liberty-8.0', '9', -1],
    ['8', '8.0.0', 0],
    ['9.1', '10.0', -1],
  ])('%s vs %s → %i', (a, b, want) => {
    expect(compareVersions(v(a), v(b))).toBe(want);
  });

  it('a list of only == items is OR; a list with range operators is AND', () => {
    expect(holds('2014.2', '==2014.2,==2015.1')).toBe(true);
    expect(holds('2015.1', '==2014.2,==2015.1')).toBe(true);
    expect(holds('2015.2', '==2014.2,==2015.1')).toBe(false);
    expect(holds('7.0', '>=7,<=8')).toBe(true);
    expect(holds('8', '>=7,<=8')).toBe(true);
    expect(holds('9', '>=7,<=8')).toBe(false);
    expect(holds('mitaka-9.0', '>=liberty-8.0')).toBe(true);
    expect(holds('kilo-7.0', '>=liberty-8.0')).toBe(false);
  });

  it('rejects items that are not comparisons, naming the item', () => {
    expect(parseConstraint('>=7,,<=8')).toEqual({ error: '">=7,,<=8" has an empty item; write items like ">=7,<=8"' });
    expect(parseConstraint('~>7')).toEqual({
      error:
        '"~>7" in "~>7" is not a comparison: expected an operator (==, !=, >=, <=, >, <) and a version like 8.0, 2015.1 or liberty-8.0',
    });
  });
});

// Seed 001, variant 1: the two `my-task` records form one group.
const SEED_001_TASKS = `
- id: my-task
  os-version: "==2014.2,==2015.1"
  fuel-version: ">=7,<=8"
  parameters:
    puppet_manifest: "deploy_legacy.pp"
    puppet_modules: "."

- id: my-task
  os-version: ">=liberty-8.0"
  fuel-version: ">=9"
  parameters:
    puppet_manifest: "deploy_10.pp"
    puppet_modules: "."
`;

describe('multi-release selection (seed 001 variant 1)', () => {
  const records = async () => {
    const { parse } = await import('yaml');
    return parse(SEED_001_TASKS) as Record<string, unknown>[];
  };
  const pick = async (os: string, fuel: string) =>
    selectVariants(
      await records(),
      (r) => r.id as string,
      { osVersion: v(os), fuelVersion: v(fuel) },
      () => undefined,
    );

  it('seed example - a Kilo environment on Fuel 7 gets the legacy manifest, without constraint keys', async () => {
    expect(await pick('2015.1', '7.0')).toEqual([
      { id: 'my-task', parameters: { puppet_manifest: 'deploy_legacy.pp', puppet_modules: '.' } },
    ]);
  });

  it('seed example - a Mitaka environment on Fuel 9 gets deploy_10.pp', async () => {
    expect(await pick('mitaka-9.0', '9.0')).toEqual([
      { id: 'my-task', parameters: { puppet_manifest: 'deploy_10.pp', puppet_modules: '.' } },
    ]);
  });

  it('seed example - a group with no satisfied record is dropped', async () => {
    expect(await pick('mitaka-9.0', '8.0')).toEqual([]);
  });

  it('the most specific satisfied record wins; ties go to file order', () => {
    const recs = [
      { id: 'a', n: 'any' },
      { id: 'a', n: 'open range', 'fuel-version': '>=8' },
      { id: 'a', n: 'bounded', 'fuel-version': '>=8,<=10' },
      { id: 'a', n: 'exact', 'fuel-version': '==9,==10' },
      { id: 'b', n: 'first' },
      { id: 'b', n: 'second' },
    ];
    expect(
      selectVariants(
        recs,
        (r) => r.id as string,
        { fuelVersion: v('9') },
        () => undefined,
      ),
    ).toEqual([
      { id: 'a', n: 'exact' },
      { id: 'b', n: 'first' },
    ]);
    expect(
      selectVariants(
        recs,
        (r) => r.id as string,
        { fuelVersion: v('8') },
        () => undefined,
      ),
    ).toEqual([
      { id: 'a', n: 'bounded' },
      { id: 'b', n: 'first' },
    ]);
    expect(
      selectVariants(
        recs,
        (r) => r.id as string,
        { fuelVersion: v('11') },
        () => undefined,
      ),
    ).toEqual([
      { id: 'a', n: 'open range' },
      { id: 'b', n: 'first' },
    ]);
  });
});

const META = (releases: string) => `
name: multi
title: Multi
version: '1.0.0'
description: multi-release
package_version: '5.0.0'
fuel_version: ['8.0', '9.0']
licenses: [x]
authors: [x]
homepage: x
releases:
${releases}
`;
const TASK = (id: string, cmd: string, extra = '') =>
  `- id: ${id}\n  type: shell\n  version: 2.0.0\n  roles: ['*']\n${extra}  parameters: {cmd: ${cmd}}\n`;

describe('multi-release packages (seed 001 variants 1-3)', () => {
  it('variant 1 - deployment tasks are chosen by the selected release and the default Fuel version (the highest declared)', async () => {
    const files = new MemoryPluginFiles({
      'metadata.yaml': META(`  - {os: ubuntu, version: 2015.1-8.0}\n  - {os: ubuntu, version: mitaka-9.0}`),
      'deployment_tasks.yaml':
        TASK('t', 'kilo', '  os-version: "==2015.1"\n') +
        TASK('t', 'mitaka', '  os-version: ">=mitaka-9.0"\n  fuel-version: ">=9"\n'),
    });
    const kilo = await loadPluginTasks(files, { os: 'ubuntu', releaseVersion: '2015.1-8.0' });
    expect(kilo.tasks.map((t) => [t.id, t.parameters.cmd])).toEqual([['t', 'kilo']]);
    const mitaka = await loadPluginTasks(files, { os: 'ubuntu', releaseVersion: 'mitaka-9.0' });
    expect(mitaka.tasks.map((t) => [t.id, t.parameters.cmd])).toEqual([['t', 'mitaka']]);
    const oldFuel = await loadPluginTasks(files, { os: 'ubuntu', releaseVersion: 'mitaka-9.0', fuelVersion: '8.0' });
    expect(oldFuel.tasks).toEqual([]);
    expect(mitaka.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  });

  it('variant 2 - per-release *_path files, falling back to the root files', async () => {
    const files = new MemoryPluginFiles({
      'metadata.yaml': META(
        `  - {os: ubuntu, version: 2015.1-8.0, deployment_tasks_path: deployment_tasks_kilo.yaml}\n  - {os: ubuntu, version: liberty-8.0, node_roles_path: node_roles_liberty.yaml}`,
      ),
      'deployment_tasks.yaml': TASK('root-task', 'root'),
      'deployment_tasks_kilo.yaml': TASK('kilo-task', 'kilo'),
      'node_roles_liberty.yaml': 'lib-role:\n  name: L\n  description: L\n  tasks: [root-task]\n',
    });
    const kilo = await loadPluginTasks(files, { os: 'ubuntu', releaseVersion: '2015.1-8.0' });
    expect(kilo.tasks.map((t) => `${t.id}@${t.source.file}`)).toEqual(['kilo-task@deployment_tasks_kilo.yaml']);
    const liberty = await loadPluginTasks(files, { os: 'ubuntu', releaseVersion: 'liberty-8.0' });
    expect(liberty.tasks.map((t) => `${t.id}@${t.source.file}`)).toEqual([
      'lib-role@node_roles_liberty.yaml',
      'root-task@deployment_tasks.yaml',
    ]);
  });

  it('variant 3 - a per-release conf_path folder, falling back to the root for missing files', async () => {
    const files = new MemoryPluginFiles({
      'metadata.yaml': META(
        `  - {os: ubuntu, version: liberty-8.0, conf_path: liberty-ubuntu/}\n  - {os: ubuntu, version: mitaka-9.0}`,
      ),
      'deployment_tasks.yaml': TASK('root-task', 'root'),
      'node_roles.yaml': 'r:\n  name: R\n  description: R\n  tasks: [root-task]\n',
      'liberty-ubuntu/deployment_tasks.yaml': TASK('root-task', 'liberty'),
    });
    const liberty = await loadPluginTasks(files, { os: 'ubuntu', releaseVersion: 'liberty-8.0' });
    expect(liberty.tasks.map((t) => `${t.id}:${String(t.parameters.cmd ?? '')}@${t.source.file}`)).toEqual([
      'r:@node_roles.yaml',
      'root-task:liberty@liberty-ubuntu/deployment_tasks.yaml',
    ]);
    const mitaka = await loadPluginTasks(files, { os: 'ubuntu', releaseVersion: 'mitaka-9.0' });
    expect(mitaka.tasks.map((t) => `${t.id}:${String(t.parameters.cmd ?? '')}`)).toEqual(['r:', 'root-task:root']);
  });

  it('a query that matches no release - lists the releases the plugin has', async () => {
    const plugin = await loadPlugin(
      new MemoryPluginFiles({ 'metadata.yaml': META(`  - {os: ubuntu, version: mitaka-9.0}`) }),
    );
    expect(selectRelease(plugin, { os: 'centos', releaseVersion: '7' })).toEqual({
      error: "no release matches os 'centos', version '7'; the plugin has: (ubuntu mitaka-9.0)",
    });
  });
});

// Seed 003's metadata example, with the files it names.
const SEED_003_METADATA = `
name: 'ExampleRelease'
title: Example release
version: '10.0.0'
package_version: '5.0.0'
description: seed 003
licenses: [x]
authors: [x]
homepage: x
releases:
  - release_name: 'ExampleRelease'
    description: 'Example Release Description'
    operating_system: 'ubuntu'
    version: 'mitaka-10.0'
    is_release: true
    base_release_path: ubuntu-10.0.0/_base.yaml
    networks_path: ubuntu-10.0.0/metadata/networks.yaml
    volumes_path: ubuntu-10.0.0/metadata/volumes.yaml
    roles_path: ubuntu-10.0.0/metadata/roles.yaml
    network_roles_path: ubuntu-10.0.0/metadata/network_roles.yaml
    components_path: ubuntu-10.0.0/metadata/components.yaml
    attributes_path: ubuntu-10.0.0/attributes/attributes.yaml
    vmware_attributes_path: ubuntu-10.0.0/attributes/vmware.yaml
    node_attributes_path: ubuntu-10.0.0/attributes/node.yaml
    nic_attributes_path: ubuntu-10.0.0/attributes/nic.yaml
    bond_attributes_path: ubuntu-10.0.0/attributes/bond.yaml
    graphs:
      - type: default
        tasks_path: ubuntu-10.0.0/graphs/deployment_graph.yaml
      - type: provisioning
        tasks_path: ubuntu-10.0.0/graphs/provisioning_graph.yaml
      - type: deletion
        tasks_path: ubuntu-10.0.0/graphs/deletion_graph.yaml
      - type: network_verification
        tasks_path: ubuntu-10.0.0/graphs/network_verification_graph.yaml
    deployment_scripts_path: ubuntu-10.0.0/deployment_scripts/
    repository_path: ubuntu-10.0.0/repositories
`;
const seed003Files = (): MemoryPluginFiles =>
  new MemoryPluginFiles(
    {
      'metadata.yaml': SEED_003_METADATA,
      'ubuntu-10.0.0/_base.yaml':
        'state: available\nnetworks: {from: base}\nattributes: {editable: {a: 1, b: 1}}\nmodes: [ha]\n',
      'ubuntu-10.0.0/metadata/networks.yaml': 'networking_parameters: {segmentation_type: vlan}\n',
      'ubuntu-10.0.0/metadata/volumes.yaml':
        'volumes_roles_mapping: {controller: [{allocate_size: min, id: os}]}\nvolumes: [{id: os, type: vg}]\n',
      'ubuntu-10.0.0/metadata/roles.yaml': 'controller: {name: Controller, description: C}\n',
      'ubuntu-10.0.0/metadata/network_roles.yaml':
        '- id: mgmt\n  default_mapping: management\n  properties: {subnet: true, gateway: false, vip: []}\n',
      'ubuntu-10.0.0/metadata/components.yaml': '- name: hypervisor:qemu\n  label: QEMU\n',
      'ubuntu-10.0.0/attributes/attributes.yaml': 'editable: {b: 2}\n',
      'ubuntu-10.0.0/attributes/vmware.yaml': '{}\n',
      'ubuntu-10.0.0/attributes/node.yaml': '{}\n',
      'ubuntu-10.0.0/attributes/nic.yaml': '{}\n',
      'ubuntu-10.0.0/attributes/bond.yaml': '{}\n',
      'ubuntu-10.0.0/graphs/deployment_graph.yaml': TASK('deploy-it', 'deploy', '  requires: [deploy_start]\n'),
      'ubuntu-10.0.0/graphs/provisioning_graph.yaml': TASK('provision-it', 'provision'),
      'ubuntu-10.0.0/graphs/deletion_graph.yaml': TASK('delete-it', 'delete'),
      'ubuntu-10.0.0/graphs/network_verification_graph.yaml': TASK('verify-it', 'verify'),
      'ubuntu-10.0.0/deployment_scripts/': '',
      'ubuntu-10.0.0/repositories/': '',
    },
    'seed-003',
  );

describe('release as a plugin (seed 003 example)', () => {
  it('gives one graph per type, each from its own file', async () => {
    const set = await loadPluginTasks(seed003Files());
    expect(set.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(set.kind).toBe('release');
    expect(
      Object.fromEntries(
        Object.entries(set.graphs).map(([k, ts]) => [k, ts.map((t) => `${t.id}@${t.source.file}:${t.source.line}`)]),
      ),
    ).toEqual({
      default: ['deploy-it@ubuntu-10.0.0/graphs/deployment_graph.yaml:1'],
      provisioning: ['provision-it@ubuntu-10.0.0/graphs/provisioning_graph.yaml:1'],
      deletion: ['delete-it@ubuntu-10.0.0/graphs/deletion_graph.yaml:1'],
      network_verification: ['verify-it@ubuntu-10.0.0/graphs/network_verification_graph.yaml:1'],
    });
    expect(set.release).toEqual({ os: 'ubuntu', version: 'mitaka-10.0', name: 'ExampleRelease' });
  });

  it('loads every _path file and merges the record over the base release key by key', async () => {
    const plugin = await loadPlugin(seed003Files());
    const selected = selectRelease(plugin);
    if ('error' in selected) throw new Error(selected.error);
    const tree = effectiveTree(plugin, selected);
    const release = tree.release as Record<string, unknown>;
    expect(release.state).toBe('available');
    expect(release.modes).toEqual(['ha']);
    expect(release.networks).toEqual({ from: 'base', networking_parameters: { segmentation_type: 'vlan' } });
    expect(release.attributes).toEqual({ editable: { a: 1, b: 2 } });
    expect(release.roles).toEqual({ controller: { name: 'Controller', description: 'C' } });
    expect(release.deployment_scripts_path).toBe('ubuntu-10.0.0/deployment_scripts/');
    expect(
      Object.keys(release)
        .filter((k) => k.endsWith('_path'))
        .sort(),
    ).toEqual(['deployment_scripts_path', 'repository_path']);
    expect((tree.files as Record<string, unknown>).network_roles).toEqual([
      { id: 'mgmt', default_mapping: 'management', properties: { subnet: true, gateway: false, vip: [] } },
    ]);
  });
});
