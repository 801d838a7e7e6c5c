import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { E2eStack, FIXTURES, dataOf } from './stack';

// Check mode (ADR 0031) on real agents with real puppet, rsync and bash: nothing on the hosts
// changes, and the recap says per task whether a deployment would change something.
const CHECK = ['--tasks', path.join(FIXTURES, 'check/tasks.yaml'), '--nodes', path.join(FIXTURES, 'check/nodes.yaml')];
const WANTED = {
  conf: 'port = 80\nworkers = 4\n',
  extra: 'extra = yes\n',
  tree: { 'a.txt': 'alpha\n', 'sub/b.txt': 'beta\n' },
  motd: 'managed by puppet\n',
};
const MTIME = new Date('2026-01-02T03:04:05Z');

interface CheckedTask {
  key: string;
  runId: string;
  result: string;
  detail?: string;
  diff?: string;
}

/** Every file and directory under `dir`: its SHA-256 (files), mode and mtime. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (rel: string): Promise<void> => {
    for (const entry of await readdir(path.join(dir, rel), { withFileTypes: true })) {
      const name = path.join(rel, entry.name);
      const full = path.join(dir, name);
      const s = await stat(full);
      const hash = entry.isFile()
        ? createHash('sha256')
            .update(await readFile(full))
            .digest('hex')
        : 'dir';
      out[name] = `${hash} ${(s.mode & 0o7777).toString(8)} ${s.mtimeMs}`;
      if (entry.isDirectory()) await walk(name);
    }
  };
  await walk('.');
  return out;
}

async function put(file: string, content: string, mode = 0o644): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, content);
  await chmod(file, mode);
  await utimes(file, MTIME, MTIME);
}

describe('check mode (whole stack)', () => {
  let stack: E2eStack;
  const target = (uid: string): string => path.join(stack.agentRoot(uid), 'target');

  beforeAll(async () => {
    stack = await E2eStack.start({
      name: 'check_mode',
      agents: ['1', '2'],
      // A reboot that was run would leave its mark in the target dir.
      agentEnv: () => ({ GRANULE_REBOOT_COMMAND: 'echo rebooted > target/rebooted' }),
    });
    for (const uid of ['1', '2']) {
      const root = stack.agentRoot(uid);
      await put(path.join(root, 'src/extra.conf'), WANTED.extra);
      for (const [name, text] of Object.entries(WANTED.tree)) await put(path.join(root, 'src/tree', name), text);
      await put(
        path.join(root, 'src/motd.pp'),
        `$root = inline_template('<%= ENV["GRANULE_ROOT"] %>')\nfile { "\${root}/target/motd": ensure => file, mode => '0644', content => "${WANTED.motd.trimEnd()}\\n" }\n`,
      );
    }
    // Node 2 is as the tasks want it; node 1 has drifted: other content, a mode, a missing file.
    const t2 = target('2');
    await put(path.join(t2, 'app.conf'), WANTED.conf);
    await put(path.join(t2, 'extra.conf'), WANTED.extra);
    for (const [name, text] of Object.entries(WANTED.tree)) await put(path.join(t2, 'tree', name), text);
    await utimes(path.join(t2, 'tree/sub'), MTIME, MTIME);
    await utimes(path.join(t2, 'tree'), MTIME, MTIME);
    await put(path.join(t2, 'motd'), WANTED.motd);
    const t1 = target('1');
    await put(path.join(t1, 'app.conf'), 'port = 8080\nworkers = 4\n');
    await put(path.join(t1, 'extra.conf'), WANTED.extra, 0o600);
    await put(path.join(t1, 'tree/a.txt'), 'alpha, changed by hand\n');
    await put(path.join(t1, 'tree/stray.txt'), 'not in the source\n');
    await put(path.join(t1, 'motd'), 'hand-written motd\n');
    for (const uid of ['1', '2']) {
      const root = stack.agentRoot(uid);
      await utimes(path.join(root, 'src/tree/sub'), MTIME, MTIME);
      await utimes(path.join(root, 'src/tree'), MTIME, MTIME);
    }
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
  }, 60_000);

  let json: { phase: string; check?: boolean; checked: { tasks: CheckedTask[] } };
  let tasks: CheckedTask[];
  let before: Record<string, Record<string, string>>;

  it('a check run changes no file on the hosts (contents, modes, mtimes) and runs no unsafe task', async () => {
    before = { '1': await snapshot(target('1')), '2': await snapshot(target('2')) };
    const r = await stack.granule([
      'deploy',
      ...CHECK,
      '--check',
      '--diff',
      '--watch',
      '--run-id',
      'check-1',
      '-o',
      'json',
    ]);
    stack.assertExitedOk(r, 'granule deploy --check');
    json = JSON.parse(r.stdout) as typeof json;
    tasks = json.checked.tasks;
    expect({ '1': await snapshot(target('1')), '2': await snapshot(target('2')) }).toEqual(before);
    for (const uid of ['1', '2']) {
      expect(existsSync(path.join(target(uid), 'migrated'))).toBe(false);
      expect(existsSync(path.join(target(uid), 'rebooted'))).toBe(false);
    }
  }, 180_000);

  it('the recap says per task: would change where the host differs, no change where it matches, skipped, with diffs', () => {
    const result = Object.fromEntries(tasks.map((t) => [t.key, t.result]));
    expect(result).toEqual({
      'conf-upload@1': 'would change',
      'conf-upload@2': 'no change',
      'extra-copy@1': 'would change',
      'extra-copy@2': 'no change',
      'tree-sync@1': 'would change',
      'tree-sync@2': 'no change',
      'motd-puppet@1': 'would change',
      'motd-puppet@2': 'no change',
      'migrate-shell@1': 'skipped',
      'migrate-shell@2': 'skipped',
      'probe-shell@1': 'no change',
      'probe-shell@2': 'no change',
      'restart@1': 'skipped',
      'restart@2': 'skipped',
    });
    const of = (key: string): CheckedTask => tasks.find((t) => t.key === key) as CheckedTask;
    expect(of('conf-upload@1').diff).toContain('-port = 8080\n+port = 80\n');
    expect(of('extra-copy@1').detail).toContain('mode 0600 -> 0644');
    expect(of('tree-sync@1').diff).toContain('*deleting   stray.txt');
    expect(of('tree-sync@1').diff).toContain('a.txt');
    expect(of('motd-puppet@1').diff).toContain('+managed by puppet');
    expect(of('migrate-shell@1').detail).toBe('shell task not marked check_safe');
    expect(of('restart@1').detail).toBe('a check run never reboots');
    expect(json).toMatchObject({ phase: 'succeeded', check: true });
  });

  it('a check-safe shell task ran: its output is in the task log', async () => {
    const r = await stack.granule(['logs', 'check-1', '--task', 'probe-shell']);
    stack.assertExitedOk(r, 'granule logs --task probe-shell');
    expect(r.stdout).toContain('probe on 1 reads port = 8080');
    expect(r.stdout).toContain('probe on 2 reads port = 80');
  }, 30_000);

  it('the run is recorded as a check, and says nothing of its nodes', async () => {
    const events = await stack.events('check-1');
    expect(dataOf(events[0], 'DeploymentRequested')).toMatchObject({ check: true, diff: true, noop: false });
    const skipped = events.filter((e) => e.type === 'TaskSkipped').map((e) => dataOf(e, 'TaskSkipped'));
    expect(skipped.every((s) => s.reason === 'check')).toBe(true);
    const nodeEvents: unknown[] = await stack.dataSource.query(
      `SELECT stream_id FROM granule_events WHERE type = 'NodeStatusChanged' AND data->>'runId' = 'check-1'`,
    );
    expect(nodeEvents).toEqual([]);
    const show = await stack.granule(['runs', 'show', 'check-1']);
    expect(show.stdout).toMatch(/^RECAP run check-1 \(check\): succeeded\n/);
    expect(show.stdout).toContain('CHECK run check-1: 4 would change, 6 no change, 4 skipped (nothing was changed)');
    expect(show.stdout).not.toContain('--- diff of');
    const list = await stack.granule(['runs', 'list']);
    expect(list.stdout.split('\n').find((l) => l.startsWith('check-1'))).toContain('default (check)');
  }, 30_000);

  it('the text recap lists each task with its result, and the diffs with --diff', async () => {
    const r = await stack.granule([
      'deploy',
      ...CHECK,
      '--check',
      '--diff',
      '--watch',
      '--run-id',
      'check-2',
      '--only',
      'conf-upload,migrate-shell',
    ]);
    stack.assertExitedOk(r, 'granule deploy --check (text)');
    expect(r.stdout).toMatch(/^RECAP run check-2 \(check\): succeeded\n/);
    const lines = r.stdout.split('\n');
    const row = (key: string): string[] | undefined => lines.find((l) => l.startsWith(key))?.split(/\s{2,}/);
    expect(row('conf-upload@1')?.slice(0, 2)).toEqual(['conf-upload@1', 'would change']);
    expect(row('conf-upload@2')?.slice(0, 2)).toEqual(['conf-upload@2', 'no change']);
    expect(row('migrate-shell@1')?.slice(0, 2)).toEqual(['migrate-shell@1', 'skipped']);
    expect(r.stdout).toContain('CHECK run check-2: 1 would change, 1 no change, 2 skipped (nothing was changed)');
    expect(r.stdout).toContain('--- diff of conf-upload@1\n');
    expect({ '1': await snapshot(target('1')), '2': await snapshot(target('2')) }).toEqual(before);
  }, 120_000);

  it('after a real deployment of the drifted node, a check finds nothing to change', async () => {
    const real = await stack.granule(['deploy', ...CHECK, '--watch', '--run-id', 'real-1', '--skip', 'restart']);
    stack.assertExitedOk(real, 'granule deploy (real)');
    expect(await readFile(path.join(target('1'), 'app.conf'), 'utf8')).toBe(WANTED.conf);
    const r = await stack.granule([
      'deploy',
      ...CHECK,
      '--check',
      '--watch',
      '--run-id',
      'check-3',
      '-o',
      'json',
      '--skip',
      'restart,migrate-shell',
    ]);
    stack.assertExitedOk(r, 'granule deploy --check after the deployment');
    const after = (JSON.parse(r.stdout) as { checked: { tasks: CheckedTask[] } }).checked.tasks;
    expect(after.filter((t) => t.result !== 'no change')).toEqual([]);
    expect(after.length).toBe(10);
  }, 180_000);
});
