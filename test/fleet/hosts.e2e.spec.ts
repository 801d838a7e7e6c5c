import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase, DEFAULT_TEST_ADMIN_URL } from '@granule/event-store';
import { Client } from 'pg';
import type { RunSummary } from '@granule/contracts';
import {
  dataOf,
  E2eStack,
  EXAMPLE_RELEASE,
  EXAMPLE_V4_PLUGIN,
  keysOf,
  REPO_ROOT,
  sleep,
  waitUntil,
} from '../e2e/stack';
import { buildAgentPackage } from '../e2e/agent-package';
import {
  agentFromDist,
  agentFromPackage,
  Fleet,
  fleetUnsupportedReason,
  HOST_AGENT_CREDS,
  HOST_AGENT_ROOT,
  startReaper,
} from './netns';

// Four hosts, each a network namespace on a bridge with a root file system of its own; the
// control plane stays in the machine's namespaces and its nats-server listens on the bridge
// (test/fleet/README.md). Tasks run by each host's agent report what that host sees.
const UIDS = ['1', '2', '3', '4'];
/** The host whose agent is the agent package (`granule agent package`) installed with install.sh --root; the others run dist/. */
const PACKAGE_HOST = '4';
/** How long host 3 stays cut off: beyond the presence TTL and the server's stale-connection check. */
const OUTAGE_MS = 8000;
const unsupported = fleetUnsupportedReason();
if (unsupported) process.stderr.write(`multi-host tier skipped: ${unsupported}\n`);
const describeFleet = unsupported ? describe.skip : describe;

/** A shell step that appends `<run> <task>` to the host's /srv/fleet/ledger, sleeps what /srv/fleet/slow/<task> says, then runs `then`. */
function step(id: string, roles: string, requires: string, then = ':'): string {
  return [
    `- id: ${id}`,
    '  type: shell',
    '  version: 2.0.0',
    `  roles: ${roles}`,
    `  requires: [${requires}]`,
    '  parameters:',
    '    cmd: |',
    '      set -e; mkdir -p /srv/fleet',
    '      echo "$GRANULE_RUN_ID $GRANULE_TASK_ID" >> /srv/fleet/ledger',
    '      if [ -e "/srv/fleet/slow/$GRANULE_TASK_ID" ]; then sleep "$(cat "/srv/fleet/slow/$GRANULE_TASK_ID")"; fi',
    ...then.split('\n').map((l) => `      ${l}`),
    '    timeout: 60',
    '    retries: 0',
    '',
  ].join('\n');
}

const sorted = (list: string[]): string[] => [...list].sort();
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');
/** Where host `uid`'s agent works (GRANULE_ROOT): the installed package keeps its state under its own folder. */
const agentRootOf = (uid: string): string => (uid === PACKAGE_HOST ? '/var/lib/granule-agent' : HOST_AGENT_ROOT);

describeFleet(`a fleet of ${UIDS.length} hosts in network namespaces, NATS their only connection`, () => {
  let fleet: Fleet;
  let stack: E2eStack;
  let inputs: string;

  beforeAll(async () => {
    let pkgFile = '';
    fleet = await Fleet.create({
      uids: UIDS,
      install: (uid) => (uid === PACKAGE_HOST ? agentFromPackage(pkgFile) : agentFromDist),
    });
    pkgFile = buildAgentPackage(fleet.controlDir);
    inputs = fleet.controlDir;
    stack = await E2eStack.start({
      name: fleet.stackName,
      agents: UIDS,
      natsHost: fleet.bridgeAddress,
      agentLauncher: fleet.launcher,
      // A TTL that a host gone for a few seconds exceeds, beats that keep a live one present.
      presenceTtlSeconds: 3,
      // The server closes a connection that answers no ping for about 3 s (default: minutes), so a
      // host cut off that long finds its connection gone when it is back and must reconnect.
      natsSettings: ['ping_interval: "1s"', 'ping_max: 2'],
    });
  }, 120_000);

  afterAll(async () => {
    const problems: string[] = [];
    await stack?.stop().catch((err: Error) => problems.push(err.message));
    await fleet?.destroy().catch((err: Error) => problems.push(err.message));
    if (problems.length > 0) throw new Error(problems.join('\n'));
  }, 60_000);

  it('a deploy to four hosts - each host has its own files in its own root, sees no other host and none of the control plane', async () => {
    const hidden = [
      path.join(REPO_ROOT, 'test/e2e/fixtures'),
      REPO_ROOT,
      stack.dir,
      fleet.controlDir,
      ...UIDS.map((u) => fleet.disk(u)),
    ];
    const tasks = path.join(inputs, 'isolation');
    mkdirSync(tasks, { recursive: true });
    writeFileSync(
      path.join(tasks, 'tasks.yaml'),
      [
        step(
          'look',
          "['*']",
          'deploy_start',
          [
            `for p in ${hidden.join(' ')}; do if [ -e "$p" ]; then echo "visible $p"; else echo "absent $p"; fi; done > /srv/fleet/seen`,
            'env | grep ^GRANULE_ | sed "s/=.*//" | sort > /srv/fleet/agent-env',
            'ls -a /tmp /srv/fleet > /srv/fleet/before',
          ].join('\n'),
        ),
        step(
          'write',
          "['*']",
          'look',
          [
            'echo "$GRANULE_RUN_ID $GRANULE_NODE_UID $(hostname)" > "/srv/fleet/$GRANULE_NODE_UID.txt"',
            'echo "$GRANULE_NODE_UID" > "/tmp/only-$GRANULE_NODE_UID"',
            "printf 'the same bytes on every host\\n' > /tmp/common",
            // Every port the control plane has, tried from the host: only NATS on the bridge answers.
            `for a in ${fleet.bridgeAddress}:${stack.natsServer?.port} ${fleet.bridgeAddress}:5432 ${fleet.bridgeAddress}:6379 ${fleet.bridgeAddress}:${stack.redisServer?.port} 127.0.0.1:5432 127.0.0.1:6379; do`,
            '  if timeout 3 bash -c "exec 3<>/dev/tcp/${a%:*}/${a#*:}" 2>/dev/null; then echo "open $a"; else echo "closed $a"; fi',
            'done > /srv/fleet/ports',
          ].join('\n'),
        ),
      ].join('\n'),
    );
    const nodes = path.join(inputs, 'isolation-nodes.yaml');
    writeFileSync(
      nodes,
      `nodes:\n${UIDS.map((u) => `  - {uid: '${u}', name: host-${u}, roles: [worker]}`).join('\n')}\n`,
    );

    const r = await stack.granule([
      'deploy',
      '--tasks',
      path.join(tasks, 'tasks.yaml'),
      '--nodes',
      nodes,
      '--run-id',
      'iso',
      '--watch',
    ]);
    stack.assertExitedOk(r, 'granule deploy iso');
    const events = await stack.events('iso');
    expect(events[events.length - 1].type).toBe('DeploymentSucceeded');
    expect(sorted(keysOf(events, 'TaskSucceeded'))).toEqual(sorted(UIDS.flatMap((u) => [`look@${u}`, `write@${u}`])));

    for (const uid of UIDS) {
      const text = (p: string): string | undefined => fleet.readHostFile(uid, p)?.toString('utf8');
      // Its own files, written by its own agent, with its own host name.
      expect(text(`/srv/fleet/${uid}.txt`)).toBe(`iso ${uid} host-${uid}\n`);
      expect(text(`/tmp/only-${uid}`)).toBe(`${uid}\n`);
      expect(text('/srv/fleet/ledger')).toBe('iso look\niso write\n');
      // No other host's file reached this disk, and from inside the host none is visible either.
      for (const other of UIDS.filter((u) => u !== uid)) {
        expect(text(`/srv/fleet/${other}.txt`)).toBeUndefined();
        expect(text(`/tmp/only-${other}`)).toBeUndefined();
      }
      const inside = await fleet.exec(uid, 'ls /srv/fleet /tmp; cat /etc/hostname; hostname');
      expect([inside.code, inside.stderr]).toEqual([0, '']);
      expect(inside.stdout).toBe(
        `/srv/fleet:\n${uid}.txt\nagent-env\nbefore\nledger\nports\nseen\n\n/tmp:\ncommon\nonly-${uid}\nhost-${uid}\nhost-${uid}\n`,
      );
      // The checkout, its fixtures, the control plane's directories and the other disks have no path here.
      expect(text('/srv/fleet/seen')).toBe(hidden.map((p) => `absent ${p}\n`).join(''));
      // The agent was given NATS settings only: no Redis URL, no database URL.
      expect(text('/srv/fleet/agent-env')?.trim().split('\n')).toEqual(
        expect.arrayContaining(['GRANULE_NATS_CREDS', 'GRANULE_NATS_URL', 'GRANULE_NODE_UID']),
      );
      expect(text('/srv/fleet/agent-env')).not.toMatch(/REDIS|DATABASE|E2E/);
      expect(fleet.readHostFile(uid, HOST_AGENT_CREDS)?.toString('utf8')).toContain('NATS USER JWT');
      expect(text('/srv/fleet/ports')).toBe(
        [
          `open ${fleet.bridgeAddress}:${stack.natsServer?.port}`,
          `closed ${fleet.bridgeAddress}:5432`,
          `closed ${fleet.bridgeAddress}:6379`,
          `closed ${fleet.bridgeAddress}:${stack.redisServer?.port}`,
          'closed 127.0.0.1:5432',
          'closed 127.0.0.1:6379',
          '',
        ].join('\n'),
      );
    }
    // Host 4's agent is the installed package, started from the host's own disk; the others run dist/ bound read-only.
    const opt = await Promise.all(UIDS.map((u) => fleet.exec(u, 'ls /opt')));
    expect(opt.map((o) => o.stdout)).toEqual(['granule\n', 'granule\n', 'granule\n', 'granule-agent\n']);
    expect(fleet.readHostFile(PACKAGE_HOST, '/etc/granule/agent.env')?.toString('utf8')).toContain(
      `GRANULE_NODE_UID=${PACKAGE_HOST}\n`,
    );
    expect(existsSync(fleet.hostPath(PACKAGE_HOST, '/var/lib/granule-agent/.granule'))).toBe(true);
    expect(existsSync(fleet.hostPath(PACKAGE_HOST, '/var/lib/granule/.granule'))).toBe(false);
    expect(existsSync(fleet.hostPath('1', '/var/lib/granule/.granule'))).toBe(true);
    expect(fleet.hostsWithout('/tmp/common', Buffer.from('the same bytes on every host\n'))).toEqual([]);
    expect(fleet.hostsWithout('/tmp/common', Buffer.from('other bytes\n'))).toEqual(UIDS);

    // A control-plane folder bound into one command run on a host (how an agent package gets
    // installed) is there for that command only.
    const bound = await fleet.exec('1', 'ls /mnt/package', { binds: [{ source: tasks, target: '/mnt/package' }] });
    expect([bound.code, bound.stdout]).toEqual([0, 'tasks.yaml\n']);
    const after = await fleet.exec('1', 'ls /mnt/package');
    expect([after.code, after.stdout]).toEqual([0, '']);
  }, 90_000);

  it('packages installed from deleted folders and a .tar.gz - puppet, shell, upload_file, copy_files and sync files reach every host byte for byte; a second deploy fetches nothing', async () => {
    await stack.service('config-store').start();
    const cli = async (...args: string[]): Promise<string> => {
      const r = await stack.granule(args, { timeoutMs: 120_000 });
      stack.assertExitedOk(r, `granule ${args.join(' ')}`);
      return r.stdout;
    };
    // The release from a folder, with a binary file (several object store chunks) a copy_files
    // task takes from the package; example-v4 from a folder; example-v5 from a .tar.gz.
    const blob = randomBytes(700 * 1024);
    const release = path.join(inputs, 'example-release');
    cpSync(EXAMPLE_RELEASE, release, { recursive: true });
    writeFileSync(path.join(release, 'deployment_scripts/files/blob.bin'), blob);
    appendFileSync(
      path.join(release, 'graphs/deployment/20-roles.yaml'),
      [
        '',
        '- id: copy-blob',
        '  type: copy_files',
        '  version: 2.0.0',
        "  roles: ['*']",
        '  requires: [hello-shell]',
        '  required_for: [deploy_end]',
        '  parameters:',
        '    files:',
        '      - {src: files/blob.bin, dst: state/blob.bin}',
        '',
      ].join('\n'),
    );
    const v4 = path.join(inputs, 'example-v4');
    cpSync(EXAMPLE_V4_PLUGIN, v4, { recursive: true });
    const v5 = path.join(inputs, 'example-v5.tar.gz');
    await cli('plugin', 'build', path.join(REPO_ROOT, 'examples/plugins/example-v5'), '--out', v5);
    await cli('release', 'install', release);
    await cli('plugin', 'install', v4);
    await cli('plugin', 'install', v5);
    const appConf = readFileSync(path.join(release, 'deployment_scripts/files/configs/app.conf'));
    rmSync(release, { recursive: true });
    rmSync(v4, { recursive: true });
    rmSync(v5);

    await cli(
      'env',
      'create',
      'fleet',
      '--release',
      'example-release',
      '--plugin',
      'example-v4',
      '--plugin',
      'example-v5',
    );
    // Every host has every role, so every task type runs on every host.
    for (const uid of UIDS)
      await cli(
        'node',
        'add',
        uid,
        '--hostname',
        fleet.hostname(uid),
        '--roles',
        'controller,compute,storage,monitoring-agent',
        '--env',
        'fleet',
      );
    const deploy = async (runId: string): Promise<void> => {
      const r = await stack.granule(['deploy', '--env', 'fleet', '--watch', '--run-id', runId, '-o', 'json'], {
        timeoutMs: 150_000,
      });
      stack.assertExitedOk(r, `granule deploy ${runId}`);
      expect((JSON.parse(r.stdout) as RunSummary).phase).toBe('succeeded');
      const failed = (await stack.events(runId)).filter((e) => e.type === 'TaskFailed');
      expect(failed.map((e) => [e.data.key, e.data.error])).toEqual([]);
    };
    /** Per host, the "package fetched" lines its agent logged. */
    const fetches = (): Record<string, number> =>
      Object.fromEntries(
        UIDS.map((u) => [
          u,
          stack
            .agent(u)
            .text.split('\n')
            .filter((l) => l.includes('"msg":"package fetched"')).length,
        ]),
      );
    const before = fetches();
    await deploy('pkg-1');

    const events = await stack.events('pkg-1');
    const types = keysOf(events, 'TaskSucceeded').map((key) => key.split('@')[0]);
    for (const task of ['hello-shell', 'puppet-motd', 'sync-configs', 'upload-marker', 'copy-blob'])
      expect([task, types.filter((t) => t === task).length]).toEqual([task, UIDS.length]);
    const expected: Record<string, Buffer> = {
      'state/blob.bin': blob, // copy_files, release folder
      'state/configs/app.conf': appConf, // sync, release folder
      'state/motd': Buffer.from('Welcome to a controller of example-release\n'), // puppet manifest, release folder
      'state/deployed.marker': Buffer.from('deployed by example-release\n'), // upload_file, release folder
      'state/monitoring-agent.conf': Buffer.from('interval = 10\n'), // upload_file, .tar.gz plugin
    };
    for (const uid of UIDS) {
      const root = agentRootOf(uid);
      for (const [rel, bytes] of Object.entries(expected))
        expect([uid, rel, fleet.readHostFile(uid, `${root}/${rel}`)?.equals(bytes)]).toEqual([uid, rel, true]);
      const text = (rel: string): string | undefined => fleet.readHostFile(uid, `${root}/${rel}`)?.toString('utf8');
      // Scripts of the packages ran on the host: post.sh of the deleted folder, install-agent.sh of the .tar.gz.
      expect(text('state/example-v4.log')).toContain(`post 6000 on ${fleet.hostname(uid)}\n`);
      expect(text('state/example-v5.log')).toContain(`monitoring agent installed on ${fleet.hostname(uid)}\n`);
      expect(text('state/hello.log')).toBe(`hello from ${fleet.hostname(uid)}\n`);
      // The same, seen from inside the host; and no path of the control plane's folder is there.
      const inside = await fleet.exec(
        uid,
        `cd ${root}/state && sha256sum blob.bin configs/app.conf motd; for p in ${fleet.controlDir} ${release} ${v4} ${v5}; do if [ -e "$p" ]; then echo "visible $p"; fi; done; ls ${root}/.granule/artifacts | grep -c '^[0-9a-f]\\{64\\}$'`,
      );
      expect([inside.code, inside.stderr]).toEqual([0, '']);
      expect(inside.stdout).toBe(
        [
          `${sha256(blob)}  blob.bin`,
          `${sha256(appConf)}  configs/app.conf`,
          `${sha256(expected['state/motd'])}  motd`,
          '3',
          '',
        ].join('\n'),
      );
    }
    // Every agent fetched each of the three packages once.
    const first = fetches();
    expect(UIDS.map((u) => first[u] - before[u])).toEqual(UIDS.map(() => 3));

    // The second deploy finds every package in each host's cache.
    await deploy('pkg-2');
    expect(fetches()).toEqual(first);
  }, 240_000);

  it('a host whose link goes down mid-run - its task fails as offline, the group tolerates it, the run ends; back online, its agent rejoins by itself and a retry finishes', async () => {
    const tasks = path.join(inputs, 'cut');
    mkdirSync(tasks, { recursive: true });
    writeFileSync(
      path.join(tasks, 'tasks.yaml'),
      [
        [
          '- id: compute',
          '  type: group',
          '  version: 2.0.0',
          '  roles: [compute]',
          '  fault_tolerance: 1',
          '  strategy: {type: parallel}',
          '  required_for: [deploy_end]',
          '',
        ].join('\n'),
        step('prepare', "['*']", 'deploy_start'),
        step('configure', '[compute]', 'prepare'),
        step('finish', '[compute]', 'configure'),
        step('report', '[controller]', 'prepare'),
      ].join('\n'),
    );
    const nodes = path.join(inputs, 'cut-nodes.yaml');
    writeFileSync(
      nodes,
      [
        'nodes:',
        "  - {uid: '1', name: ctl-1, roles: [controller]}",
        ...['2', '3', '4'].map((u) => `  - {uid: '${u}', name: cmp-${u}, roles: [compute]}`),
        '',
      ].join('\n'),
    );
    // configure@3 runs long enough for its host to be cut off while it runs.
    const slow = fleet.hostPath('3', '/srv/fleet/slow/configure');
    mkdirSync(path.dirname(slow), { recursive: true });
    writeFileSync(slow, '12\n');

    const started = await stack.granule([
      'deploy',
      '--tasks',
      path.join(tasks, 'tasks.yaml'),
      '--nodes',
      nodes,
      '--run-id',
      'cut',
    ]);
    stack.assertExitedOk(started, 'granule deploy cut');
    await stack.waitForEvent('cut', 'TaskStarted', (e) => e.data.key === 'configure@3', 30_000);
    const cutAt = Date.now();
    fleet.linkDown('3');
    const events = await stack.waitForEnd('cut', 30_000);
    const endedAfterMs = Date.now() - cutAt;
    // The presence TTL (3 s) plus a few ticks: bounded by the TTL, not by the task's 60 s timeout.
    expect(endedAfterMs).toBeLessThan(15_000);
    const failed = events.find((e) => e.type === 'TaskFailed');
    expect(failed && [failed.data.key, failed.data.error]).toEqual(['configure@3', 'node 3 went offline']);
    expect(events.filter((e) => e.type === 'NodeFailed').map((e) => e.data)).toEqual([
      { node: '3', reason: 'offline' },
    ]);
    expect(events.some((e) => e.type === 'GroupToleranceExceeded' || e.type === 'DeploymentStopRequested')).toBe(false);
    const last = events[events.length - 1];
    expect([last.type, dataOf(last, 'DeploymentSucceeded').failedNodes]).toEqual(['DeploymentSucceeded', ['3']]);
    expect(sorted(keysOf(events, 'TaskSucceeded'))).toEqual([
      'configure@2',
      'configure@4',
      'finish@2',
      'finish@4',
      'prepare@1',
      'prepare@2',
      'prepare@3',
      'prepare@4',
      'report@1',
    ]);
    const nodeEvents = (): Promise<NodeEvent[]> => nodeStream(stack, '3');
    await waitUntil(
      async () => (await nodeEvents()).some((e) => e.type === 'NodeWentOffline'),
      'NodeWentOffline of node 3',
      15_000,
    );

    // Cut off long enough for the server to have closed the host's connection.
    await sleep(OUTAGE_MS - (Date.now() - cutAt));
    // Back on the network: the same agent process (never restarted) reconnects and is present again by itself.
    writeFileSync(slow, '0\n');
    const agent = stack.agent('3');
    expect(agent.text).not.toContain('lost the NATS connection');
    fleet.linkUp('3');
    await waitUntil(
      () => /lost the NATS connection[^]*the NATS connection is back/.test(agent.text),
      "agent 3's reconnection",
      30_000,
    );
    await stack.waitForPresence(['3'], 45_000);
    await waitUntil(
      async () => {
        const list = await nodeEvents();
        const off = list.findIndex((e) => e.type === 'NodeWentOffline');
        return off >= 0 && list.slice(off).some((e) => e.type === 'NodeCameOnline');
      },
      'NodeCameOnline of node 3 after it went offline',
      30_000,
    );
    expect([agent.running, agent.starts]).toEqual([true, 1]);

    const retry = await stack.granule(['retry', 'cut', '--failed-only', '--run-id', 'cut-retry', '--watch'], {
      timeoutMs: 60_000,
    });
    stack.assertExitedOk(retry, 'granule retry cut');
    const again = await stack.events('cut-retry');
    expect(sorted(dataOf(again[1], 'PlanAccepted').only ?? [])).toEqual(['configure@3', 'finish@3']);
    const end = again[again.length - 1];
    expect([end.type, dataOf(end, 'DeploymentSucceeded').failedNodes]).toEqual(['DeploymentSucceeded', []]);
    // On host 3: the cut-off configure ran on to its end there, then the retry's two tasks.
    const ledger = fleet.readHostFile('3', '/srv/fleet/ledger')?.toString('utf8').split('\n');
    expect(ledger?.filter((l) => l.startsWith('cut'))).toEqual([
      'cut prepare',
      'cut configure',
      'cut-retry configure',
      'cut-retry finish',
    ]);
  }, 150_000);

  it('an interrupted test process - the reaper removes its hosts, links, directories, processes and database', async () => {
    // A stand-in for a jest killed mid-run, with names as its fleet and stack would have them.
    const owner = spawn('/bin/sh', ['-c', 'sleep 300 & wait'], { stdio: 'ignore' });
    const pid = owner.pid as number;
    const ns = `gfleet-${pid}-1`;
    const bridge = `gf${pid}b`;
    const dir = mkdtempSync(path.join(os.tmpdir(), `granule-fleet-${pid}-`));
    const stackDir = mkdtempSync(path.join(os.tmpdir(), `granule-e2e-fleet${pid}-`));
    execFileSync('ip', ['netns', 'add', ns]);
    execFileSync('ip', ['link', 'add', bridge, 'type', 'bridge']);
    const inHost = spawn('ip', ['netns', 'exec', ns, 'sleep', '300'], { stdio: 'ignore' });
    const db = await createTestDatabase(`e2e_fleet${pid}`, { migrations: [] });
    await db.dataSource.destroy();
    const reaper = startReaper(dir, pid);
    const ownerChild = await waitUntil(
      () => Number(readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ')[0]) || undefined,
      "the owner's child",
      5000,
    );
    // The reaper notes the owner's descendants once a second.
    await sleep(2500);
    owner.kill('SIGKILL');
    await waitUntil(() => reaper.exitCode !== null || reaper.signalCode !== null, 'the reaper to end', 20_000);

    const exists = async (): Promise<boolean> => {
      const rows: unknown[] = await onAdminQuery(`SELECT 1 FROM pg_database WHERE datname = '${db.name}'`);
      return rows.length > 0;
    };
    expect({
      reaperEnded: reaper.exitCode !== null || reaper.signalCode !== null,
      netns: execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).includes(ns),
      bridge: execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).includes(`: ${bridge}`),
      fleetDir: existsSync(dir),
      stackDir: existsSync(stackDir),
      ownerChild: processLives(ownerChild),
      hostProcess: processLives(inHost.pid as number),
      database: await exists(),
    }).toEqual({
      reaperEnded: true,
      netns: false,
      bridge: false,
      fleetDir: false,
      stackDir: false,
      ownerChild: false,
      hostProcess: false,
      database: false,
    });
  }, 60_000);
});

/** True while `pid` runs (a zombie is not running). */
function processLives(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !['Z', 'X'].includes(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
  } catch {
    return false;
  }
}

/** A query on the test PostgreSQL's admin database. */
async function onAdminQuery(sql: string): Promise<unknown[]> {
  const client = new Client({ connectionString: process.env.GRANULE_TEST_DATABASE_URL ?? DEFAULT_TEST_ADMIN_URL });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

/** A node stream's event (`NodeWentOffline`, `NodeCameOnline`, ...). */
interface NodeEvent {
  version: number;
  type: string;
  data: Record<string, unknown>;
}

/** The events of node `uid`'s stream (`node-<uid>`), in order. */
async function nodeStream(stack: E2eStack, uid: string): Promise<NodeEvent[]> {
  const rows: { stream_version: string; type: string; data: Record<string, unknown> }[] = await stack.dataSource.query(
    'SELECT stream_version, type, data FROM granule_events WHERE stream_id = $1 ORDER BY stream_version',
    [`node-${uid}`],
  );
  return rows.map((r) => ({ version: Number(r.stream_version), type: r.type, data: r.data }));
}
