import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

// Runs the built CLI as operators do (./granule builds dist/ when sources changed).
const root = join(__dirname, '..', '..', '..', '..');
const granule = (...args: string[]) =>
  spawnSync(join(root, 'granule'), args, { cwd: root, encoding: 'utf8', timeout: 120_000 });
const SEED_TASKS = 'libs/domain/planner/src/__fixtures__/seed-002-deployment_tasks.yaml';
const SEED_NODES = 'libs/domain/planner/src/__fixtures__/seed-002-nodes.yaml';

interface Instance {
  task: string;
  node: string;
  priority: number;
  requires: string[];
  skipped: boolean;
  plugin?: string;
}

describe('granule plan (built CLI)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'granule-plan-e2e-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, text);
    return path;
  };

  it('prints one entry per task per node as json, sortable by priority', () => {
    const run = granule('plan', '--tasks', SEED_TASKS, '--nodes', SEED_NODES, '-o', 'json');
    expect(run.status).toBe(0);
    const { instances } = JSON.parse(run.stdout) as { instances: Instance[] };
    const real = instances.filter((i) => i.node !== 'sync' && !i.task.includes(':'));
    expect(
      real
        .filter((i) => i.task === 'setup_network')
        .map((i) => i.node)
        .sort(),
    ).toEqual(['node-1', 'node-2', 'node-3', 'node-4', 'node-5', 'node-6', 'node-7', 'node-8']);
    const priority = new Map(instances.map((i) => [`${i.task}@${i.node}`, i.priority]));
    for (const i of instances) for (const r of i.requires) expect(priority.get(r)).toBeLessThan(i.priority);
  });

  it('simulates with durations and prints makespan, timeline and critical path', () => {
    const durations = file('durations.yaml', 'setup_services: 10\nsetup_network: 2\n');
    const run = granule(
      'plan',
      '--tasks',
      SEED_TASKS,
      '--nodes',
      SEED_NODES,
      '--simulate',
      '--durations',
      durations,
      '-o',
      'json',
    );
    expect(run.status).toBe(0);
    const result = JSON.parse(run.stdout) as {
      makespan: number;
      critical_path: string[];
      timeline: { task: string; node: string; start: number }[];
    };
    // Five sequential steps (primary, 2 controller batches, network/cinder, compute) of 2 + 10.
    expect(result.makespan).toBe(60);
    expect(result.critical_path[0]).toBe('setup_network@node-1');
    expect(result.critical_path.at(-1)).toBe('setup_services@node-8');
    expect(result.timeline.find((e) => e.task === 'setup_network' && e.node === 'node-8')?.start).toBe(48);
  });

  it('plans the graph a file name gives (provisioning_graph.yaml) with --graph, and names the graphs there are', () => {
    const tasks = join(dir, 'release');
    file('release/deployment_graph.yaml', '- {id: deploy-it, type: shell, roles: "*", parameters: {cmd: "true"}}\n');
    file('release/provisioning_graph.yaml', '- {id: image, type: shell, roles: "*", parameters: {cmd: "true"}}\n');
    const nodes = file('nodes.yaml', 'nodes: [{uid: n1, roles: [x]}]\n');
    const provisioning = granule('plan', '--tasks', tasks, '--nodes', nodes, '--graph', 'provisioning', '-o', 'json');
    expect(provisioning.status).toBe(0);
    expect(
      (JSON.parse(provisioning.stdout).instances as Instance[]).filter((i) => i.node === 'n1').map((i) => i.task),
    ).toEqual(['image']);
    const unknown = granule('plan', '--tasks', tasks, '--nodes', nodes, '--graph', 'deletion');
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toBe(
      'error: --graph deletion: the tasks define no such graph (available: default, provisioning)\n',
    );
  });

  it("a release's graphs folder - each file plans in the graph its release declares, an undeclared one is refused", () => {
    const graphs = 'examples/releases/example-release/graphs';
    const nodes = 'examples/releases/example-release/nodes.yaml';
    const tasksOf = (run: ReturnType<typeof granule>): string[] => [
      ...new Set((JSON.parse(run.stdout).instances as Instance[]).filter((i) => i.node !== 'sync').map((i) => i.task)),
    ];
    const byDefault = granule('plan', '--tasks', graphs, '--nodes', nodes, '-o', 'json');
    expect(byDefault.status).toBe(0);
    expect(tasksOf(byDefault).sort()).toEqual(['hello-shell', 'puppet-motd', 'sync-configs', 'upload-marker']);
    const provisioning = granule('plan', '--tasks', graphs, '--nodes', nodes, '--graph', 'provisioning', '-o', 'json');
    expect(tasksOf(provisioning)).toEqual(['provision-prepare']);

    const release = join(dir, 'rel');
    file('rel/metadata.yaml', readFileSync('examples/releases/example-release/metadata.yaml', 'utf8'));
    file('rel/base/_base.yaml', readFileSync('examples/releases/example-release/base/_base.yaml', 'utf8'));
    file('rel/metadata/roles.yaml', readFileSync('examples/releases/example-release/metadata/roles.yaml', 'utf8'));
    file(
      'rel/graphs/deployment/10-a.yaml',
      '- {id: a, type: shell, version: 2.0.0, roles: "*", parameters: {cmd: "true"}}\n',
    );
    file(
      'rel/graphs/provisioning.yaml',
      '- {id: p, type: shell, version: 2.0.0, roles: "*", parameters: {cmd: "true"}}\n',
    );
    const stray = file(
      'rel/graphs/extra.yaml',
      '- {id: x, type: shell, version: 2.0.0, roles: "*", parameters: {cmd: "true"}}\n',
    );
    const refused = granule('plan', '--tasks', join(release, 'graphs'), '--nodes', nodes);
    expect([refused.status, refused.stderr]).toEqual([
      1,
      `error: ${stray}: no graph of release 'example-release' reads this file (default: graphs/deployment/*.yaml; provisioning: graphs/provisioning.yaml): plan the release with --release ${relative(process.cwd(), release)}, or name the file in a graph's tasks_path\n`,
    ]);
  });

  it('--durations - an id no task has is an error naming the line (and the likely id); without --simulate a usage error', () => {
    const durations = file('typo-durations.yaml', 'setup_network: 2\nsetup_servics: 10\n');
    const typo = granule('plan', '--tasks', SEED_TASKS, '--nodes', SEED_NODES, '--simulate', '--durations', durations);
    expect([typo.status, typo.stdout, typo.stderr]).toEqual([
      1,
      '',
      `error: ${durations}:2: setup_servics: no task of the planned graph has this id (did you mean 'setup_services'?)\n`,
    ]);
    const alone = granule('plan', '--tasks', SEED_TASKS, '--nodes', SEED_NODES, '--durations', durations);
    expect([alone.status, alone.stderr]).toEqual([
      2,
      'error: --durations gives the seconds of a simulation: add --simulate\n',
    ]);
  });

  it('merges a plugin folder and a cluster file; conditions read the cluster settings', () => {
    const tasks = file(
      'cond/deployment_tasks.yaml',
      '- {id: ceph, type: shell, roles: "*", condition: "settings:storage.ceph == true", parameters: {cmd: "true"}}\n',
    );
    const cluster = file('cluster.yaml', 'status: new\nsettings: {storage: {ceph: false}}\n');
    const nodes = file('nodes2.yaml', 'nodes: [{uid: n1, roles: [controller]}]\n');
    const run = granule(
      'plan',
      '--tasks',
      tasks,
      '--nodes',
      nodes,
      '--plugin',
      'examples/plugins/example-v4',
      '--cluster',
      cluster,
      '-o',
      'json',
    );
    expect(run.status).toBe(0);
    const instances = JSON.parse(run.stdout).instances as Instance[];
    expect(instances.find((i) => i.task === 'ceph' && i.node === 'n1')?.skipped).toBe(true);
    expect(instances.filter((i) => i.plugin === 'example-v4').map((i) => i.task)).toContain(
      'example-v4.pre_deployment.1',
    );

    const broken = file('broken-plugin/metadata.yaml', 'name: broken\n');
    const refused = granule('plan', '--tasks', tasks, '--nodes', nodes, '--plugin', join(broken, '..'));
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('metadata.yaml');
  });

  it("a plugin task requiring a task nobody defines: the plugin's file, line and task, exit 1", () => {
    file(
      'acme/metadata.yaml',
      [
        'name: acme',
        'title: acme plugin',
        "version: '1.0.0'",
        "package_version: '5.0.0'",
        'description: a plugin whose task requires a missing one',
        "licenses: ['Apache License Version 2.0']",
        "authors: ['Granule']",
        "homepage: 'https://example.com/acme'",
        'releases:',
        '  - {os: ubuntu, version: mitaka-9.0, deployment_scripts_path: deployment_scripts/, repository_path: repositories/ubuntu}',
        '',
      ].join('\n'),
    );
    file('acme/deployment_scripts/deploy.sh', 'true\n');
    file('acme/repositories/ubuntu/.keep', '');
    const tasks = file(
      'acme/deployment_tasks.yaml',
      [
        '- id: acme-prepare',
        '  type: shell',
        '  version: 2.0.0',
        '  roles: [acme-role]',
        '  parameters: {cmd: "true", timeout: 60}',
        '- id: acme-install',
        '  type: shell',
        '  version: 2.0.0',
        '  roles: [acme-role]',
        '  requires: [acme-prepair]',
        '  parameters: {cmd: "true", timeout: 60}',
        '',
      ].join('\n'),
    );
    const nodes = file('acme-nodes.yaml', 'nodes: [{uid: n1, roles: [acme-role]}]\n');
    const base = file('acme-base.yaml', '- {id: base, type: shell, roles: ["*"], parameters: {cmd: "true"}}\n');
    const run = granule('plan', '--tasks', base, '--nodes', nodes, '--plugin', join(tasks, '..'));
    expect([run.status, run.stdout]).toEqual([1, '']);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines).toContain(
      `error: ${tasks}:6: task 'acme-install': requires names task 'acme-prepair', which does not exist`,
    );
    // The validator's warning for the same line, as plugin validate prints it; nothing else.
    expect(lines.filter((l) => !l.startsWith('error: '))).toEqual([
      `warning: ${tasks}:6: task 'acme-install': requires names 'acme-prepair', which this plugin does not define; it must come from the release or another plugin`,
    ]);
  });

  it('exits 1 naming file, line and task for bad input, and 2 for usage errors', () => {
    const bad = file(
      'bad/deployment_tasks.yaml',
      '- {id: a, type: shell, roles: "*", parameters: {cmd: x}}\n- {id: b, type: teleport, roles: "*"}\n',
    );
    const nodes = file('nodes3.yaml', 'nodes: [{uid: n1, roles: [x]}]\n');
    const invalid = granule('plan', '--tasks', bad, '--nodes', nodes);
    expect(invalid.status).toBe(1);
    expect(invalid.stderr).toContain(`${bad}:2`);
    expect(invalid.stderr).toContain("task 'b'");
    expect(invalid.stderr).toContain('teleport');
    expect(invalid.stderr).not.toContain('    at ');

    const usage = granule('plan', '--tasks', SEED_TASKS, '--nodes', SEED_NODES, '-o', 'xml');
    expect(usage.status).toBe(2);
    expect(usage.stderr).toBe('error: -o xml: expected one of json, yaml, text, dot, mermaid\n');
  });

  it('plans a release plugin with a packaged plugin (--release DIR --plugin FILE.tar.gz)', () => {
    const pkg = join(dir, 'example-v5.tar.gz');
    const build = granule('plugin', 'build', 'examples/plugins/example-v5', '--out', pkg);
    expect(build.status).toBe(0);
    const nodes = 'examples/releases/example-release/nodes.yaml';
    const run = granule(
      'plan',
      '--release',
      'examples/releases/example-release',
      '--plugin',
      pkg,
      '--nodes',
      nodes,
      '-o',
      'json',
    );
    expect(run.status).toBe(0);
    const instances = JSON.parse(run.stdout).instances as Instance[];
    expect(instances.some((i) => i.plugin === 'example-v5')).toBe(true);
    expect(instances.some((i) => i.task === 'hello-shell')).toBe(true);
    const provisioning = granule(
      'plan',
      '--release',
      'examples/releases/example-release',
      '--graph',
      'provisioning',
      '--nodes',
      nodes,
      '-o',
      'json',
    );
    expect(provisioning.status).toBe(0);
    const provisioningTasks = new Set(
      (JSON.parse(provisioning.stdout).instances as Instance[]).filter((i) => i.node !== 'sync').map((i) => i.task),
    );
    expect(provisioningTasks.has('hello-shell')).toBe(false);
    expect(provisioningTasks.size).toBeGreaterThan(0);
    const neither = granule('plan', '--nodes', nodes);
    expect([neither.status, neither.stderr]).toEqual([
      2,
      'error: give the tasks with --tasks PATH... or --release DIR\n',
    ]);
  });

  it('text - a header row, then one aligned row per instance', () => {
    const run = granule('plan', '--tasks', SEED_TASKS, '--nodes', SEED_NODES, '--skip', 'setup_network');
    expect(run.status).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0].split(/\s+/)).toEqual(['PRIORITY', 'INSTANCE', 'TYPE', 'STAGE', 'SKIPPED']);
    const starts = ['INSTANCE', 'TYPE', 'STAGE'].map((h) => lines[0].indexOf(h));
    const skipped = lines.find((l) => l.includes('setup_network@node-1')) as string;
    expect(skipped.trimEnd().endsWith('filter')).toBe(true);
    for (const line of lines.slice(1)) {
      const cells = line.split(/\s{2,}/);
      expect(starts.map((at, i) => line.indexOf(cells[i + 1], i === 0 ? 0 : starts[i - 1]))).toEqual(starts);
    }
  });

  it('exports dot and mermaid graphs', () => {
    const dot = granule('plan', '--tasks', SEED_TASKS, '--nodes', SEED_NODES, '--node', 'node-1', '-o', 'dot');
    expect(dot.status).toBe(0);
    expect(dot.stdout).toMatch(/^digraph plan \{/);
    expect(dot.stdout).toContain('"setup_network@node-1" -> "setup_services@node-1";');
    const mermaid = granule('plan', '--tasks', SEED_TASKS, '--nodes', SEED_NODES, '--node', 'node-1', '-o', 'mermaid');
    expect(mermaid.stdout.split('\n')[0]).toBe('flowchart LR');
  });
});
