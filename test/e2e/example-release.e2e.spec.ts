import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import type { RunEventEntry, RunSummary } from '@granule/contracts';
import { orderViolations, workPredecessors, type PlannedInstance } from './plan-order';
import {
  E2eStack,
  EXAMPLE_NODES,
  EXAMPLE_RELEASE,
  EXAMPLE_V4_PLUGIN,
  FIXTURES,
  dataOf,
  keysOf,
  versionOf,
} from './stack';

// The example release with the example-v4 plugin on four agents, driven by the CLI as an
// operator would: deploy --watch without a TTY, then the history and time-travel queries.
const RELEASE_ARGS = ['--release', EXAMPLE_RELEASE, '--nodes', EXAMPLE_NODES, '--plugin', EXAMPLE_V4_PLUGIN];

describe('example release on four agents (whole stack)', () => {
  let stack: E2eStack;
  const runId = 'example-1';

  beforeAll(async () => {
    stack = await E2eStack.start({ name: 'example', agents: ['1', '2', '3', '4'] });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  }, 60_000);

  it('deploy --watch without a TTY - exit 0, timestamped plain lines on stderr, the recap on stdout', async () => {
    const r = await stack.granule(['deploy', ...RELEASE_ARGS, '--run-id', runId, '--watch']);
    expect({ code: r.code, stderr: r.stderr }).toMatchObject({ code: 0 });
    // The example-v4 plugin's validator warning comes first, as plugin validate and install print it.
    const all = r.stderr.trimEnd().split('\n');
    expect(all.filter((l) => l.startsWith('warning: '))).toEqual([
      expect.stringMatching(/^warning: \S+example-v4\/tasks\.yaml:2: tasks\.yaml is deprecated/),
    ]);
    const lines = all.filter((l) => !l.startsWith('warning: '));
    expect(lines[0]).toBe(`run ${runId}`);
    // eslint-disable-next-line no-control-regex -- asserting there is no escape sequence
    expect(r.stderr).not.toMatch(/\x1b\[|\r/);
    for (const line of lines.slice(1)) expect(line).toMatch(/^\d\d:\d\d:\d\d {2}#\d+ +[A-Z][A-Za-z]+( .*)?$/);
    const events = await stack.events(runId);
    expect(lines.slice(1).map((l) => l.split(/ +/)[2])).toEqual(events.map((e) => e.type));
    expect(lines[lines.length - 1]).toMatch(/#\d+ +DeploymentSucceeded$/);

    const recap = r.stdout.split('\n');
    expect(recap[0]).toBe(`RECAP run ${runId}: succeeded`);
    // Node 1 runs pre 100, pre 4000, hello, puppet, sync and post; 17 task instances in all.
    const row = (node: string): string[] =>
      (recap.find((l) => l.trim().split(/\s+/)[0] === node) ?? '').trim().split(/\s+/);
    expect([row('1'), row('2'), row('3'), row('4')]).toEqual([
      ['1', '6', '0', '0', '0', '0', 'ok'],
      ['2', '4', '0', '0', '0', '0', 'ok'],
      ['3', '4', '0', '0', '0', '0', 'ok'],
      ['4', '3', '0', '0', '0', '0', 'ok'],
    ]);

    // Each node's own stream says it was deploying, then ready, in this run.
    const nodeEvents: { stream_id: string; data: { from?: string; to: string; runId: string } }[] =
      await stack.dataSource.query(
        `SELECT stream_id, data FROM granule_events WHERE type = 'NodeStatusChanged' AND data->>'runId' = $1 ORDER BY stream_id, stream_version`,
        [runId],
      );
    for (const uid of ['1', '2', '3', '4']) {
      expect([
        uid,
        nodeEvents.filter((e) => e.stream_id === `node-${uid}`).map((e) => [e.data.from ?? null, e.data.to]),
      ]).toEqual([
        uid,
        [
          [null, 'deploying'],
          ['deploying', 'ready'],
        ],
      ]);
    }
  }, 120_000);

  it('the tasks had their effects on every node: files written by shell, puppet, sync and upload_file', () => {
    const file = (uid: string, rel: string): string | undefined => {
      const p = path.join(stack.agentRoot(uid), 'state', rel);
      return existsSync(p) ? readFileSync(p, 'utf8') : undefined;
    };
    const host = hostname();
    for (const uid of ['1', '2', '3', '4'])
      expect([uid, file(uid, 'hello.log')]).toEqual([uid, `hello from ${host}\n`]);
    expect(file('1', 'motd')).toBe('Welcome to a controller of example-release\n');
    for (const uid of ['2', '3', '4']) expect(file(uid, 'motd')).toBeUndefined();
    const appConf = readFileSync(path.join(EXAMPLE_RELEASE, 'deployment_scripts/files/configs/app.conf'), 'utf8');
    for (const uid of ['1', '4'])
      expect(readdirSync(path.join(stack.agentRoot(uid), 'state/configs'))).toEqual(['app.conf']);
    expect([file('1', 'configs/app.conf'), file('4', 'configs/app.conf')]).toEqual([appConf, appConf]);
    for (const uid of ['2', '3'])
      expect([file(uid, 'deployed.marker'), file(uid, 'configs/app.conf')]).toEqual([
        'deployed by example-release\n',
        undefined,
      ]);
    for (const uid of ['1', '4']) expect(file(uid, 'deployed.marker')).toBeUndefined();
    // example-v4: pre_deployment/100 then /4000 (controller only), post_deployment/6000 everywhere.
    expect(file('1', 'example-v4.log')).toBe(`pre 100\npre 4000 (network)\npost 6000 on ${host}\n`);
    expect(file('2', 'example-v4.log')).toBe(`pre 100\npost 6000 on ${host}\n`);
    expect(file('3', 'example-v4.log')).toBe(`pre 100\npost 6000 on ${host}\n`);
    expect(file('4', 'example-v4.log')).toBe(`post 6000 on ${host}\n`);
  });

  it('the event log follows the plan: no task was dispatched before everything it requires succeeded', async () => {
    const planned = await stack.granule(['plan', ...RELEASE_ARGS, '-o', 'json']);
    stack.assertExitedOk(planned, 'granule plan');
    const instances = (JSON.parse(planned.stdout) as { instances: PlannedInstance[] }).instances;
    const predecessors = workPredecessors(instances);
    const events = await stack.events(runId);
    expect(orderViolations(events, predecessors)).toEqual([]);
    // Every task instance that does work ran exactly once and succeeded.
    expect(keysOf(events, 'TaskSucceeded').sort()).toEqual([...predecessors.keys()].sort());
    expect(keysOf(events, 'TaskDispatched').sort()).toEqual([...predecessors.keys()].sort());
    // The dependencies that matter here, spelled out.
    expect(predecessors.get('example-v4.pre_deployment.2@1')).toEqual([
      'example-v4.pre_deployment.1@1',
      'example-v4.pre_deployment.1@2',
      'example-v4.pre_deployment.1@3',
    ]);
    expect(versionOf(events, 'TaskSucceeded', 'example-v4.pre_deployment.1@1')).toBeLessThan(
      versionOf(events, 'TaskDispatched', 'example-v4.pre_deployment.2@1'),
    );
    for (const uid of ['1', '2', '3', '4']) {
      expect(versionOf(events, 'TaskSucceeded', `hello-shell@${uid}`)).toBeLessThan(
        versionOf(events, 'TaskDispatched', `example-v4.post_deployment.1@${uid}`),
      );
    }
    expect(versionOf(events, 'TaskSucceeded', 'hello-shell@1')).toBeLessThan(
      versionOf(events, 'TaskDispatched', 'puppet-motd@1'),
    );
    const last = events[events.length - 1];
    expect([last.type, dataOf(last, 'DeploymentSucceeded').failedNodes]).toEqual(['DeploymentSucceeded', []]);
  });

  it('runs events --at N returns exactly N events; runs show --at N is the state after event N', async () => {
    const events = await stack.events(runId);
    const firstDispatch = events.find((e) => e.type === 'TaskDispatched');
    if (!firstDispatch) throw new Error('no TaskDispatched event');
    const n = firstDispatch.version;
    const key = String(firstDispatch.data.key);

    const listed = await stack.granule(['runs', 'events', runId, '--at', String(n), '-o', 'json']);
    expect(listed.code).toBe(0);
    const entries = JSON.parse(listed.stdout) as RunEventEntry[];
    expect(entries.map((e) => [e.version, e.event.type])).toEqual(events.slice(0, n).map((e) => [e.version, e.type]));

    const shown = await stack.granule(['runs', 'show', runId, '--at', String(n), '-o', 'json']);
    expect(shown.code).toBe(0);
    const then = JSON.parse(shown.stdout) as RunSummary;
    expect([then.phase, then.version, then.running, then.totals.succeeded, then.totals.dispatched]).toEqual([
      'running',
      n,
      [key],
      0,
      1,
    ]);

    const now = JSON.parse((await stack.granule(['runs', 'show', runId, '-o', 'json'])).stdout) as RunSummary;
    expect([now.phase, now.version, now.running, now.totals.succeeded]).toEqual([
      'succeeded',
      events.length,
      [],
      events.filter((e) => e.type === 'TaskSucceeded').length,
    ]);
  }, 30_000);

  it('deploy --dry-run plans and runs nothing', async () => {
    const before = stack.ledger().length;
    const filesBefore = readFileSync(path.join(stack.agentRoot('1'), 'state/hello.log'), 'utf8');
    const r = await stack.granule(['deploy', ...RELEASE_ARGS, '--run-id', 'example-dry', '--dry-run']);
    expect([r.code, r.stdout]).toEqual([0, 'example-dry\n']);
    const events = await stack.waitForEnd('example-dry');
    expect(events.map((e) => e.type)).toEqual(['DeploymentRequested', 'PlanAccepted', 'DeploymentSucceeded']);
    expect(dataOf(events[0], 'DeploymentRequested').dryRun).toBe(true);
    expect(dataOf(events[1], 'PlanAccepted').tasks).toBe(17);
    expect(stack.ledger().length).toBe(before);
    expect(readFileSync(path.join(stack.agentRoot('1'), 'state/hello.log'), 'utf8')).toBe(filesBefore);
    // Said to be one where the operator looks: at the deploy, in the list and in the recap.
    expect(r.stderr).toContain(
      'run example-dry is a dry run: planned, nothing sent to any host (granule graph --run example-dry shows its plan)',
    );
    const listed = await stack.granule(['runs', 'list']);
    expect(listed.stdout.split('\n').find((l) => l.startsWith('example-dry '))).toMatch(/ default \(dry run\) /);
    const shown = await stack.granule(['runs', 'show', 'example-dry']);
    expect(shown.stdout).toMatch(/^RECAP run example-dry \(dry run\): succeeded/);
  }, 30_000);

  it('a critical node without an agent at start - DeploymentRefused naming it, deploy --watch exits 1', async () => {
    const r = await stack.granule([
      'deploy',
      '--release',
      EXAMPLE_RELEASE,
      '--nodes',
      path.join(FIXTURES, 'example/nodes-with-offline.yaml'),
      '--run-id',
      'example-offline',
      '--watch',
    ]);
    expect(r.code).toBe(1);
    const events = await stack.events('example-offline');
    expect(events.map((e) => e.type)).toEqual(['DeploymentRequested', 'DeploymentRefused']);
    expect(events[1].data).toEqual({
      code: 'OFFLINE_CRITICAL_NODES',
      reason: 'critical nodes are offline: 5',
      offlineCriticalNodes: ['5'],
    });
    expect(r.stdout.split('\n')[0]).toBe('RECAP run example-offline: refused — critical nodes are offline: 5');
    expect(r.stderr).toMatch(/#2 +DeploymentRefused +critical nodes are offline: 5\n$/);
  }, 60_000);

  it('the same refusal without --watch - deploy prints the run id, says why it was refused and exits 1', async () => {
    const r = await stack.granule([
      'deploy',
      '--release',
      EXAMPLE_RELEASE,
      '--nodes',
      path.join(FIXTURES, 'example/nodes-with-offline.yaml'),
      '--run-id',
      'example-offline-2',
    ]);
    expect([r.code, r.stdout, r.stderr]).toEqual([
      1,
      'example-offline-2\n',
      'error: run example-offline-2 was refused: critical nodes are offline: 5\n',
    ]);
  }, 60_000);
});
