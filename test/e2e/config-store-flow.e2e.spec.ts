import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { RunSummary } from '@granule/contracts';
import { E2eStack, EXAMPLE_RELEASE, EXAMPLE_V4_PLUGIN, waitUntil } from './stack';

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
    expect(early.stderr).toContain(
      'no release is installed: install one with granule release install <DIR|FILE.tar.gz>',
    );

    await cli('release', 'install', EXAMPLE_RELEASE);
    await cli('plugin', 'install', EXAMPLE_V4_PLUGIN);
    await cli('env', 'create', 'demo', '--release', 'example-release', '--plugin', 'example-v4');
    const nodes: [string, string, string][] = [
      ['1', 'controller', 'control'],
      ['2', 'compute', 'compute'],
      ['3', 'compute', 'compute'],
      ['4', 'storage', 'storage'],
    ];
    for (const [uid, role, tag] of nodes)
      await cli('node', 'add', uid, '--hostname', `node-${uid}`, '--roles', role, '--tags', tag, '--env', 'demo');
    await cli('strategy', 'upload', path.join(EXAMPLE_RELEASE, 'strategy.yaml'), '--name', 'example');

    const run = await stack.granule(
      ['deploy', '--env', 'demo', '--strategy', 'example', '--watch', '--run-id', 'env-1', '-o', 'json'],
      { timeoutMs: 180_000 },
    );
    stack.assertExitedOk(run, 'granule deploy --env demo');
    const summary = JSON.parse(run.stdout) as RunSummary;
    expect(summary.strategy?.outcome).toBe('success');
    expect(summary.strategy?.groups.map((g) => [g.name, g.status])).toEqual([
      ['controllers', 'DEPLOYED'],
      ['storage', 'DEPLOYED'],
      ['computes', 'DEPLOYED'],
    ]);
    // What the tasks did on each host: the shell step everywhere, puppet on the controller,
    // the plugin's pre/post lines, rsync to controller and storage, the marker on computes.
    for (const uid of ['1', '2', '3', '4'])
      expect(readFileSync(path.join(stack.agentRoot(uid), 'state/hello.log'), 'utf8')).toContain('hello from');
    expect(existsSync(path.join(stack.agentRoot('1'), 'state/motd'))).toBe(true);
    expect(
      readFileSync(path.join(stack.agentRoot('1'), 'state/example-v4.log'), 'utf8')
        .split('\n')
        .slice(0, 2),
    ).toEqual(['pre 100', 'pre 4000 (network)']);
    expect(existsSync(path.join(stack.agentRoot('4'), 'state/configs/app.conf'))).toBe(true);
    expect(existsSync(path.join(stack.agentRoot('2'), 'state/deployed.marker'))).toBe(true);
  }, 300_000);

  it("config-store's node statuses follow the run and the agents' presence", async () => {
    const statuses = async (): Promise<Record<string, string>> => {
      const nodes = JSON.parse(await cli('node', 'list', '--env', 'demo', '-o', 'json')) as {
        uid: string;
        status: string;
      }[];
      return Object.fromEntries(nodes.map((n) => [n.uid, n.status]));
    };
    const expected = (want: Record<string, string>) => async () => {
      const now = await statuses();
      return Object.entries(want).every(([uid, status]) => now[uid] === status) && now;
    };
    // Every node's work succeeded in the run above: the orchestrator's projection says ready.
    await waitUntil(
      expected({ '1': 'ready', '2': 'ready', '3': 'ready', '4': 'ready' }),
      'all four nodes ready in node list',
      15_000,
    );
    // The agent of node 4 dies: its presence lapses, the node goes offline, then comes back ready.
    await stack.agent('4').kill('SIGKILL');
    await waitUntil(expected({ '4': 'offline', '1': 'ready' }), 'node 4 offline in node list', 20_000);
    await stack.agent('4').start();
    await waitUntil(expected({ '4': 'ready' }), 'node 4 back to ready in node list', 20_000);

    // Nothing is lost while config-store is down: node 3 goes offline meanwhile, and config-store
    // learns it once it is back.
    await stack.service('config-store').kill('SIGTERM');
    await stack.agent('3').kill('SIGKILL');
    await waitUntil(
      async () => {
        const rows: { type: string }[] = await stack.dataSource.query(
          `SELECT type FROM granule_events WHERE stream_id = 'node-3' ORDER BY stream_version DESC LIMIT 1`,
        );
        return rows[0]?.type === 'NodeWentOffline';
      },
      'NodeWentOffline on node-3',
      20_000,
    );
    await stack.service('config-store').start();
    await waitUntil(
      expected({ '3': 'offline', '4': 'ready' }),
      'node 3 offline in node list after config-store came back',
      20_000,
    );
    await stack.agent('3').start();
    await waitUntil(expected({ '3': 'ready' }), 'node 3 back to ready in node list', 20_000);
  }, 120_000);

  it("the environment's status follows its deployments (operational after a success), not its dry runs or other graphs", async () => {
    const envStatus = async (): Promise<string> =>
      (JSON.parse(await cli('env', 'show', 'demo', '-o', 'json')) as { status: string }).status;
    await waitUntil(
      async () => (await envStatus()) === 'operational',
      'environment demo operational after env-1',
      15_000,
    );
    // Put it back by hand, then runs that do not speak for it: it stays as it is.
    await cli('env', 'set', 'demo', '--status', 'new');
    stack.assertExitedOk(
      await stack.granule(['deploy', '--env', 'demo', '--dry-run', '--watch', '--run-id', 'env-dry']),
      'deploy --dry-run',
    );
    stack.assertExitedOk(
      await stack.granule(['deploy', '--env', 'demo', '--graph', 'provisioning', '--watch', '--run-id', 'env-prov']),
      'deploy --graph provisioning',
    );
    // Once the projection's checkpoint is past both runs' last events, it has applied them.
    await waitUntil(
      async () => {
        const rows: { done: boolean }[] = await stack.dataSource.query(
          `SELECT c.global_position >= (SELECT max(global_position) FROM granule_events WHERE stream_id IN ('run-env-dry', 'run-env-prov')) AS done
           FROM granule_checkpoints c WHERE c.consumer = 'granule-node-status'`,
        );
        return rows[0]?.done === true;
      },
      'the status projection past env-dry and env-prov',
      15_000,
    );
    expect(await envStatus()).toBe('new');
    stack.assertExitedOk(
      await stack.granule(['deploy', '--env', 'demo', '--node', '1', '--watch', '--run-id', 'env-2']),
      'deploy --node 1',
    );
    await waitUntil(
      async () => (await envStatus()) === 'operational',
      'environment demo operational after env-2',
      15_000,
    );
  }, 120_000);

  it("exports the environment's plan as a graph", async () => {
    const dot = await cli('graph', '--env', 'demo', '-o', 'dot');
    expect(dot).toContain('"hello-shell@1"');
    expect(dot).toContain('"hello-shell@1" -> "puppet-motd@1";');
  }, 60_000);
});
