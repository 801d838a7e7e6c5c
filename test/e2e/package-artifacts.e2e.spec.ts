import { randomBytes } from 'node:crypto';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { ArtifactStore, packDirectory } from '@granule/artifacts';
import { readPluginSourceFiles } from '@granule/config-store-client';
import type { RunSummary } from '@granule/contracts';
import { E2eStack, EXAMPLE_RELEASE, EXAMPLE_V4_PLUGIN, REPO_ROOT, waitUntil } from './stack';

// Deployment files reach the agents from the artifacts bucket, not from the disk they were
// installed from (ADR 0026): the release folder and the plugin package are deleted before the
// deploy, and the files still arrive on every node, byte for byte; a second deploy fetches
// nothing; a package that is gone fails its tasks instead of running a stale copy.
describe('package artifacts: deployment files travel over NATS to the agents', () => {
  let stack: E2eStack;
  let work: string;
  const token = `e2e-${randomBytes(12).toString('hex')}`;
  const port = 20000 + Math.floor(Math.random() * 20000);
  const blob = randomBytes(700 * 1024); // several object store chunks
  const appConf = readFileSync(path.join(EXAMPLE_RELEASE, 'deployment_scripts/files/configs/app.conf'));
  const postSh = readFileSync(path.join(EXAMPLE_V4_PLUGIN, 'deployment_scripts/post.sh'));

  beforeAll(async () => {
    stack = await E2eStack.start({
      name: 'artifacts',
      agents: ['1', '2', '3', '4'],
      configStoreEnv: { GRANULE_API_TOKEN: token, GRANULE_HTTP_PORT: String(port) },
      agentEnv: (uid): Record<string, string> => (uid === '1' ? { GRANULE_HEALTH_PORT: String(port + 1) } : {}),
    });
    await stack.service('config-store').start();
    work = mkdtempSync(path.join(os.tmpdir(), 'granule-e2e-packages-'));
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  }, 60_000);

  const cli = async (...args: string[]): Promise<string> => {
    const r = await stack.granule(args, { timeoutMs: 120_000 });
    if (r.code !== 0) throw new Error(`granule ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return r.stdout;
  };
  /** Lines an agent logged for each package it fetched. */
  const fetches = (): Record<string, number> =>
    Object.fromEntries(
      ['1', '2', '3', '4'].map((uid) => [
        uid,
        readFileSync(path.join(stack.dir, 'logs', `agent-${uid}.log`), 'utf8')
          .split('\n')
          .filter((l) => l.includes('"msg":"package fetched"')).length,
      ]),
    );
  const deploy = async (runId: string): Promise<RunSummary> => {
    const r = await stack.granule(['deploy', '--env', 'demo', '--watch', '--run-id', runId, '-o', 'json'], {
      timeoutMs: 180_000,
    });
    return { ...(JSON.parse(r.stdout) as RunSummary), exitCode: r.code } as RunSummary & { exitCode: number };
  };
  const stateFile = (uid: string, rel: string): Buffer | undefined => {
    const p = path.join(stack.agentRoot(uid), 'state', rel);
    return existsSync(p) ? readFileSync(p) : undefined;
  };

  it('installs a release folder and a plugin .tar.gz, deletes both, and deploys their files byte for byte', async () => {
    // The release, with a binary file a copy_files task takes from the package.
    const release = path.join(work, 'example-release');
    cpSync(EXAMPLE_RELEASE, release, { recursive: true });
    writeFileSync(path.join(release, 'deployment_scripts/files/blob.bin'), blob);
    appendFileSync(
      path.join(release, 'graphs/deployment/20-roles.yaml'),
      [
        '',
        '- id: copy-blob',
        '  type: copy_files',
        '  version: 2.0.0',
        '  roles: [compute]',
        '  requires: [hello-shell]',
        '  required_for: [deploy_end]',
        '  parameters:',
        '    files:',
        '      - {src: files/blob.bin, dst: state/blob.bin}',
        '',
      ].join('\n'),
    );
    const plugin = path.join(work, 'example-v4');
    cpSync(EXAMPLE_V4_PLUGIN, plugin, { recursive: true });
    const pkg = path.join(work, 'example-v4.tar.gz');
    await cli('plugin', 'build', plugin, '--out', pkg);

    await cli('release', 'install', release);
    await cli('plugin', 'install', pkg);
    rmSync(release, { recursive: true });
    rmSync(plugin, { recursive: true });
    rmSync(pkg);

    await cli('env', 'create', 'demo', '--release', 'example-release', '--plugin', 'example-v4');
    for (const [uid, role] of [
      ['1', 'controller'],
      ['2', 'compute'],
      ['3', 'compute'],
      ['4', 'storage'],
    ])
      await cli('node', 'add', uid, '--hostname', `node-${uid}`, '--roles', role, '--env', 'demo');

    const summary = (await deploy('pkg-1')) as RunSummary & { exitCode: number };
    expect({ exitCode: summary.exitCode, phase: summary.phase }).toEqual({ exitCode: 0, phase: 'succeeded' });

    for (const uid of ['2', '3']) expect(stateFile(uid, 'blob.bin')?.equals(blob)).toBe(true);
    for (const uid of ['1', '4']) expect(stateFile(uid, 'blob.bin')).toBeUndefined();
    for (const uid of ['1', '4']) expect(stateFile(uid, 'configs/app.conf')?.equals(appConf)).toBe(true);
    expect(stateFile('1', 'motd')?.toString()).toBe('Welcome to a controller of example-release\n');
    // post.sh of the plugin package ran on every node, from the agent's copy of the package.
    for (const uid of ['1', '2', '3', '4'])
      expect(stateFile(uid, 'example-v4.log')?.toString()).toMatch(/post 6000 on /);
    const copies = (uid: string): string[] =>
      readdirSync(path.join(stack.agentRoot(uid), '.granule/artifacts')).filter((n) => /^[0-9a-f]{64}$/.test(n));
    const posts = copies('1')
      .map((d) => path.join(stack.agentRoot('1'), '.granule/artifacts', d, 'files/post.sh'))
      .filter((f) => existsSync(f));
    expect(posts.map((f) => readFileSync(f))).toEqual([postSh]);

    // Each agent fetched each of the two packages once (shell tasks of both run everywhere).
    expect(fetches()).toEqual({ '1': 2, '2': 2, '3': 2, '4': 2 });
    for (const uid of ['1', '2', '3', '4']) expect(copies(uid)).toHaveLength(2);
  }, 300_000);

  it('stores names, versions and digests, never a path of the machine that installed them', async () => {
    const releases: { artifact_digest: string; graphs: unknown }[] = await stack.dataSource.query(
      `SELECT artifact_digest, graphs FROM config_releases WHERE name = 'example-release'`,
    );
    const plugins: { artifact_digest: string; releases: unknown }[] = await stack.dataSource.query(
      `SELECT artifact_digest, releases FROM config_plugins WHERE name = 'example-v4'`,
    );
    expect(releases[0].artifact_digest).toMatch(/^[0-9a-f]{64}$/);
    expect(plugins[0].artifact_digest).toMatch(/^[0-9a-f]{64}$/);
    const stored = JSON.stringify([releases, plugins]);
    expect(stored).not.toContain(work);
    const hello = (
      releases[0].graphs as { default: { id: string; parameters: Record<string, unknown> }[] }
    ).default.find((t) => t.id === 'hello-shell');
    expect(hello?.parameters.$package).toEqual({
      name: 'example-release',
      version: '1.0.0',
      digest: releases[0].artifact_digest,
    });
    // The plans graph-planner stored (the dispatches carry their parameters).
    const plans: { document: Buffer }[] = await stack.dataSource.query(`SELECT document FROM granule_plans`);
    expect(plans.length).toBeGreaterThan(0);
    const planned = plans.map((p) => gunzipSync(p.document).toString()).join('\n');
    expect(planned).not.toContain(work);
    expect(planned).toContain(`"digest":"${plugins[0].artifact_digest}"`);
    expect(planned).toContain(`"digest":"${releases[0].artifact_digest}"`);
  });

  it('a second deploy fetches nothing', async () => {
    const before = fetches();
    const summary = (await deploy('pkg-2')) as RunSummary & { exitCode: number };
    expect(summary.phase).toBe('succeeded');
    expect(fetches()).toEqual(before);
    // Agent 1 counts the same on /metrics: two downloads in all, and copies it already had since.
    const metrics = await (await fetch(`http://127.0.0.1:${port + 1}/metrics`)).text();
    const count = (outcome: string): number =>
      Number(
        new RegExp(`^granule_agent_artifact_fetches_total\\{[^}]*outcome="${outcome}"[^}]*\\} (\\d+)$`, 'm').exec(
          metrics,
        )?.[1] ?? 0,
      );
    expect([count('fetched'), count('cached') > 0, count('failed')]).toEqual([2, true, 0]);
  }, 200_000);

  it('a noop deploy fetches the package its tasks read (puppet --noop, rsync --dry-run) and changes nothing', async () => {
    const [{ artifact_digest: digest }]: { artifact_digest: string }[] = await stack.dataSource.query(
      `SELECT artifact_digest FROM config_releases WHERE name = 'example-release'`,
    );
    // The controller has no copy of the release any more, and its files drifted by hand.
    rmSync(path.join(stack.agentRoot('1'), '.granule/artifacts', digest), { recursive: true });
    writeFileSync(path.join(stack.agentRoot('1'), 'state/motd'), 'changed by hand\n');
    rmSync(path.join(stack.agentRoot('1'), 'state/configs/app.conf'));
    const before = fetches();

    const r = await stack.granule(
      ['deploy', '--env', 'demo', '--noop', '--watch', '--run-id', 'pkg-noop', '-o', 'json'],
      {
        timeoutMs: 180_000,
      },
    );
    expect([r.code, (JSON.parse(r.stdout) as RunSummary).phase]).toEqual([0, 'succeeded']);
    expect(fetches()).toEqual({ ...before, '1': before['1'] + 1 });
    // Puppet read the package's manifest and only reported; rsync only listed what it would copy.
    const puppet = await cli('logs', 'pkg-noop', '--node', '1', '--task', 'puppet-motd');
    expect(puppet).toMatch(/File\[\S+\/state\/motd\]\/content: .*\(noop\)/);
    expect(stateFile('1', 'motd')?.toString()).toBe('changed by hand\n');
    expect(stateFile('1', 'configs/app.conf')).toBeUndefined();
  }, 200_000);

  it('a package that is gone fails its tasks with the reason, on a node without a copy; nothing stale runs', async () => {
    const [{ artifact_digest: digest }]: { artifact_digest: string }[] = await stack.dataSource.query(
      `SELECT artifact_digest FROM config_releases WHERE name = 'example-release'`,
    );
    await new ArtifactStore(await stack.natsConnection(), stack.prefix).delete(digest);
    rmSync(path.join(stack.agentRoot('2'), '.granule/artifacts', digest), { recursive: true });
    rmSync(path.join(stack.agentRoot('2'), 'state/blob.bin'));
    const summary = (await deploy('pkg-3')) as RunSummary & { exitCode: number };
    expect(summary.exitCode).toBe(1);
    const failed: { data: { error?: string; key?: string } }[] = await stack.dataSource.query(
      `SELECT data FROM granule_events WHERE type = 'TaskFailed' AND stream_id = 'run-pkg-3'`,
    );
    expect(failed.length).toBeGreaterThan(0);
    expect(failed[0].data.error).toMatch(
      new RegExp(
        `^the files of package example-release 1\\.0\\.0 \\(${digest.slice(0, 12)}…\\) could not be had, so the task did not run: artifact ${digest.slice(0, 12)}… in object store \\S+_ARTIFACTS does not exist`,
      ),
    );
    expect(stateFile('2', 'blob.bin')).toBeUndefined();
  }, 200_000);

  it('over HTTP: PUT /artifacts/<digest> streams the files in and checks them, POST /plugins names them', async () => {
    const http = (method: string, url: string, body: string | Buffer | undefined, type: string): Promise<Response> =>
      fetch(`http://127.0.0.1:${port}${url}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': type },
        body,
      });
    await waitUntil(
      () =>
        http('GET', '/plugins', undefined, 'text/plain').then(
          (r) => r.ok,
          () => false,
        ),
      'the config-store HTTP API',
      20_000,
    );
    const plugin = path.join(REPO_ROOT, 'examples/plugins/example-v5');
    const packed = await packDirectory(path.join(plugin, 'deployment_scripts'), path.join(work, 'v5.tar'));
    const tar = readFileSync(packed.file);

    const wrong = await http('PUT', `/artifacts/${'a'.repeat(64)}`, tar, 'application/x-tar');
    expect(wrong.status).toBe(400);
    expect(((await wrong.json()) as { error: { code: string } }).error.code).toBe('ARTIFACT_DAMAGED');
    const stored = await http('PUT', `/artifacts/${packed.digest}`, tar, 'application/x-tar');
    expect([stored.status, await stored.json()]).toEqual([201, { digest: packed.digest, size: packed.size }]);

    const body = {
      ...(await readPluginSourceFiles(plugin)),
      artifact_digest: packed.digest,
      artifact_size: packed.size,
    };
    const installed = await http('POST', '/plugins', JSON.stringify(body), 'application/json');
    expect(installed.status).toBe(201);
    const [row]: { artifact_digest: string }[] = await stack.dataSource.query(
      `SELECT artifact_digest FROM config_plugins WHERE name = 'example-v5'`,
    );
    expect(row.artifact_digest).toBe(packed.digest);
    expect(await new ArtifactStore(await stack.natsConnection(), stack.prefix).info(packed.digest)).toEqual({
      digest: packed.digest,
      size: packed.size,
    });
  }, 60_000);
});
