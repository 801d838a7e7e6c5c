import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { RunSummary } from '@granule/contracts';
import { E2eStack, EXAMPLE_RELEASE, EXAMPLE_V4_PLUGIN } from './stack';

// The operator's path end to end, as the quick start does it: config-store holds the release,
// plugin, environment, nodes and strategy; graph-planner plans the environment from it; the
// orchestrator runs the strategy's phases on four real agents.
describe('environment deployment through config-store (release, plugin, env, nodes, strategy)', () => {
  let stack: E2eStack;
  beforeAll(async () => {
    stack = await E2eStack.start({ name: 'configflow', agents: ['1', '2', '3', '4'] });
    await stack.service('config-store').start();
  }, 120_000);
  afterAll(async () => stack?.stop(), 60_000);

  const cli = async (...args: string[]): Promise<string> => {
    const r = await stack.granule(args);
    if (r.code !== 0) throw new Error(`granule ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return r.stdout;
  };

  it('refuses an environment before a release is installed, then installs, registers and deploys with a stored strategy', async () => {
    const early = await stack.granule(['env', 'create', 'demo']);
    expect(early.code).toBe(1);
    expect(early.stderr).toContain('no release is installed: install one with ./granule release install <DIR|FILE.tar.gz>');

    await cli('release', 'install', EXAMPLE_RELEASE);
    await cli('plugin', 'install', EXAMPLE_V4_PLUGIN);
    await cli('env', 'create', 'demo', '--release', 'example-release', '--plugin', 'example-v4');
    const nodes: [string, string, string][] = [
      ['1', 'controller', 'control'],
      ['2', 'compute', 'compute'],
      ['3', 'compute', 'compute'],
      ['4', 'storage', 'storage'],
    ];
    for (const [uid, role, tag] of nodes) await cli('node', 'add', uid, '--hostname', `node-${uid}`, '--roles', role, '--tags', tag, '--env', 'demo');
    await cli('strategy', 'upload', path.join(EXAMPLE_RELEASE, 'strategy.yaml'), '--name', 'example');

    const run = await stack.granule(['deploy', '--env', 'demo', '--strategy', 'example', '--watch', '--run-id', 'env-1', '-o', 'json'], { timeoutMs: 180_000 });
    expect(run.code).toBe(0);
    const summary = JSON.parse(run.stdout) as RunSummary;
    expect(summary.strategy?.outcome).toBe('success');
    expect(summary.strategy?.groups.map((g) => [g.name, g.status])).toEqual([
      ['controllers', 'DEPLOYED'],
      ['storage', 'DEPLOYED'],
      ['computes', 'DEPLOYED'],
    ]);
    // What the tasks did on each host: the shell step everywhere, puppet on the controller,
    // the plugin's pre/post lines, rsync to controller and storage, the marker on computes.
    for (const uid of ['1', '2', '3', '4']) expect(readFileSync(path.join(stack.agentRoot(uid), 'state/hello.log'), 'utf8')).toContain('hello from');
    expect(existsSync(path.join(stack.agentRoot('1'), 'state/motd'))).toBe(true);
    expect(readFileSync(path.join(stack.agentRoot('1'), 'state/example-v4.log'), 'utf8').split('\n').slice(0, 2)).toEqual(['pre 100', 'pre 4000 (network)']);
    expect(existsSync(path.join(stack.agentRoot('4'), 'state/configs/app.conf'))).toBe(true);
    expect(existsSync(path.join(stack.agentRoot('2'), 'state/deployed.marker'))).toBe(true);
  }, 300_000);

  it("exports the environment's plan as a graph", async () => {
    const dot = await cli('graph', '--env', 'demo', '-o', 'dot');
    expect(dot).toContain('"hello-shell@1"');
    expect(dot).toContain('"hello-shell@1" -> "puppet-motd@1";');
  }, 60_000);
});
