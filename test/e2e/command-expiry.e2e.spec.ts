import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { E2eStack, FIXTURES, sleep, waitUntil } from './stack';

// A command nobody answered never runs later: with no orchestrator running, the CLI gives up
// after the command's time to live (plus a grace for an answer given just in time) and says
// nothing happened; an orchestrator started afterwards drops the command and records it expired.
const CHAIN = ['--tasks', path.join(FIXTURES, 'chain/tasks.yaml'), '--nodes', path.join(FIXTURES, 'chain/nodes.yaml')];

describe('commands nobody answered in time (whole stack)', () => {
  let stack: E2eStack;
  const token = `e2e-${randomBytes(12).toString('hex')}`;
  const port = 20000 + Math.floor(Math.random() * 20000);

  beforeAll(async () => {
    stack = await E2eStack.start({
      name: 'expiry',
      agents: ['1', '2', '3', '4'],
      configStoreEnv: { GRANULE_API_TOKEN: token, GRANULE_HTTP_PORT: String(port) },
    });
    // config-store's HTTP API: the runs' events as an operator's tools read them.
    await stack.service('config-store').start();
    await waitUntil(
      () =>
        fetch(`http://127.0.0.1:${port}/health`).then(
          (r) => r.ok,
          () => false,
        ),
      'the config-store HTTP API',
      20_000,
    );
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  }, 60_000);

  it('a deploy sent while no orchestrator runs: the CLI says nothing was started, and a later orchestrator records it expired and runs nothing', async () => {
    await stack.service('orchestrator').kill('SIGTERM');
    const started = Date.now();
    const r = await stack.granule(['deploy', ...CHAIN, '--run-id', 'late', '--command-ttl', '1'], {
      timeoutMs: 30_000,
    });
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      'error: no orchestrator answered within 11 s: nothing was started (the command expired and will never run); start an orchestrator (npm run start:orchestrator) and run the command again',
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(10_000);

    await stack.service('orchestrator').start();
    const events = await stack.waitForEnd('late', 30_000);
    expect(events.map((e) => e.type)).toEqual(['DeploymentRequested', 'DeploymentExpired']);
    expect(events[1].data).toMatchObject({ command: 'StartDeployment', ttlSeconds: 1 });
    // Nothing ran, then or later.
    await sleep(1500);
    expect(stack.ledger('late')).toEqual([]);
    expect((await stack.events('late')).length).toBe(2);
    const list = await stack.granule(['runs', 'list', '-o', 'json']);
    stack.assertExitedOk(list, 'runs list');
    expect(JSON.parse(list.stdout)).toContainEqual(expect.objectContaining({ runId: 'late', phase: 'expired' }));
  }, 90_000);

  it('a stop sent while no orchestrator runs never stops the run later: it is recorded expired and the run goes on', async () => {
    stack.setSlow('step2@1', 4);
    const deploy = await stack.granule(['deploy', ...CHAIN, '--run-id', 'keeps-going']);
    stack.assertExitedOk(deploy, 'deploy');
    await stack.waitForEvent('keeps-going', 'TaskStarted', (e) => e.data.key === 'step2@1', 30_000);
    await stack.service('orchestrator').kill('SIGTERM');
    const stop = await stack.granule(['stop', 'keeps-going', '--command-ttl', '1'], { timeoutMs: 30_000 });
    expect(stop.code).toBe(1);
    expect(stop.stderr).toContain('nothing was stopped (the command expired and will never run)');

    await stack.service('orchestrator').start();
    const events = await stack.waitForEnd('keeps-going', 60_000);
    expect(events.map((e) => e.type)).not.toContain('DeploymentStopRequested');
    expect(events[events.length - 1].type).toBe('DeploymentSucceeded');
    const expired = await waitUntil(async () => {
      const rows: Array<{ type: string; data: { command: string; runId: string } }> = await stack.db.dataSource.query(
        `SELECT type, data FROM granule_events WHERE stream_id LIKE 'command-%'`,
      );
      return rows.length > 0 ? rows : undefined;
    }, 'the expired stop recorded');
    expect(expired).toEqual([
      { type: 'CommandExpired', data: expect.objectContaining({ command: 'StopDeployment', runId: 'keeps-going' }) },
    ]);
    // The operator sees it where they look at the run: among its events and in its recap.
    const listed = await stack.granule(['runs', 'events', 'keeps-going']);
    stack.assertExitedOk(listed, 'runs events');
    const lines = listed.stdout.trimEnd().split('\n');
    const at = lines.findIndex((l) => /\bCommandExpired\b/.test(l));
    expect(lines[at]).toMatch(/CommandExpired +StopDeployment by \S+ waited 1 s for an orchestrator; never acted on/);
    expect(lines.at(-1)).toMatch(/DeploymentSucceeded/);
    const show = await stack.granule(['runs', 'show', 'keeps-going']);
    stack.assertExitedOk(show, 'runs show');
    expect(show.stdout).toMatch(
      /^expired: \d\d:\d\d:\d\d StopDeployment by \S+ waited 1 s for an orchestrator; never acted on/m,
    );
    const json = JSON.parse((await stack.granule(['runs', 'events', 'keeps-going', '-o', 'json'])).stdout) as {
      stream?: string;
      event: { type: string };
    }[];
    expect(json.filter((e) => e.stream)).toEqual([
      expect.objectContaining({
        stream: expect.stringMatching(/^command-/),
        event: expect.objectContaining({ type: 'CommandExpired' }),
      }),
    ]);
    // Over HTTP, asked for, the same entries in the same order; by default only the run's events.
    const http = async (route: string): Promise<unknown> => {
      const res = await fetch(`http://127.0.0.1:${port}${route}`, { headers: { authorization: `Bearer ${token}` } });
      expect([route, res.status]).toEqual([route, 200]);
      return res.json();
    };
    expect(await http('/runs/keeps-going/events?expiredCommands=true')).toEqual(json);
    expect(await http('/runs/keeps-going/events')).toEqual(json.filter((e) => !e.stream));
  }, 120_000);
});
