import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { SECRET_DIFF_NOTE } from './check-mode';
import { createTempAgent, type TempAgent } from './testing/temp-agent.fixture';

// Check mode (ADR 0031) with the real programs: puppet --noop, rsync --dry-run, bash.
jest.setTimeout(120_000);

let agent: TempAgent;
const CHECK = { check: true, diff: true } as const;

beforeAll(async () => {
  agent = await createTempAgent();
  await mkdir(path.join(agent.rootDir, 'src', 'tree'), { recursive: true });
  await writeFile(path.join(agent.rootDir, 'src', 'tree', 'a.conf'), 'a = 1\n');
  await writeFile(path.join(agent.rootDir, 'src', 'wanted.conf'), 'port = 80\nhost = example\n');
  await writeFile(path.join(agent.allowed, 'current.conf'), 'port = 8080\nhost = example\n');
  await chmod(path.join(agent.allowed, 'current.conf'), 0o644);
});
afterAll(() => agent.cleanup());

/** The file's content and mtime: what a check must leave as it was. */
async function fingerprint(file: string): Promise<[string, number, number] | 'absent'> {
  const s = await stat(file).catch(() => undefined);
  return s ? [await readFile(file, 'utf8'), s.mtimeMs, s.mode & 0o7777] : 'absent';
}

describe('check mode - task runners', () => {
  it('upload_file - a different file would change (with a unified diff), a matching one would not; neither is written', async () => {
    const target = path.join(agent.allowed, 'current.conf');
    const before = await fingerprint(target);
    const differs = await agent.run('upload_file', { path: target, data: 'port = 80\nhost = example\n' }, CHECK);
    expect(differs.outcome).toMatchObject({ status: 'succeeded', attempts: 0, check: { verdict: 'would_change' } });
    expect(differs.outcome.check?.diff).toBe(
      `--- ${target} (on the host)\n+++ ${target} (wanted)\n@@ -1,2 +1,2 @@\n-port = 8080\n+port = 80\n host = example\n`,
    );
    const same = await agent.run('upload_file', { path: target, data: 'port = 8080\nhost = example\n' }, CHECK);
    expect(same.outcome.check).toEqual({ verdict: 'no_change', reason: `${target} is as wanted` });
    const mode = await agent.run(
      'upload_file',
      { path: target, data: 'port = 8080\nhost = example\n', permissions: '0600' },
      CHECK,
    );
    expect(mode.outcome.check).toMatchObject({
      verdict: 'would_change',
      reason: `would change ${target}: mode 0644 -> 0600`,
    });
    const created = await agent.run('upload_file', { path: path.join(agent.allowed, 'new/x.txt'), data: 'x\n' }, CHECK);
    expect(created.outcome.check?.verdict).toBe('would_change');
    expect(await fingerprint(target)).toEqual(before);
    expect(await fingerprint(path.join(agent.allowed, 'new'))).toBe('absent');
  });

  it('a task with secrets - no diff is shown (the file may hold an old secret), the verdict is', async () => {
    const target = path.join(agent.allowed, 'secret.conf');
    await writeFile(target, 'password = old-secret\n');
    const r = await agent.run(
      'upload_file',
      { path: target, data: 'password = new-secret\n' },
      { ...CHECK, secrets: ['new-secret'] },
    );
    expect(r.outcome.check).toMatchObject({ verdict: 'would_change', diff: SECRET_DIFF_NOTE });
    expect(JSON.stringify(r)).not.toContain('old-secret');
  });

  it('without diff - the verdict comes alone', async () => {
    const target = path.join(agent.allowed, 'current.conf');
    const r = await agent.run('upload_file', { path: target, data: 'other\n' }, { check: true });
    expect(r.outcome.check).toEqual({ verdict: 'would_change', reason: `would change ${target}: content differs` });
  });

  it('copy_files - compares every file with its source, copies none', async () => {
    const r = await agent.run(
      'copy_files',
      {
        files: [
          { src: 'src/wanted.conf', dst: path.join(agent.allowed, 'current.conf') },
          { src: 'src/tree/a.conf', dst: path.join(agent.allowed, 'copied/a.conf') },
        ],
      },
      CHECK,
    );
    expect(r.outcome.check?.verdict).toBe('would_change');
    expect(r.outcome.check?.reason).toMatch(/^2 of 2 files: /);
    expect(r.outcome.check?.diff).toContain('-port = 8080\n+port = 80\n');
    expect(await fingerprint(path.join(agent.allowed, 'copied'))).toBe('absent');
  });

  it('shell - runs only when check_safe (exit 2: would change), is skipped otherwise', async () => {
    const marker = path.join(agent.base, 'ran');
    const unsafe = await agent.run('shell', { cmd: `touch ${marker}` }, CHECK);
    expect(unsafe.outcome).toMatchObject({
      status: 'succeeded',
      attempts: 0,
      check: { verdict: 'skipped', reason: 'shell task not marked check_safe' },
    });
    expect(await fingerprint(marker)).toBe('absent');
    const safe = await agent.run('shell', { cmd: 'echo looking; exit 2', check_safe: true, retries: 0 }, CHECK);
    expect(safe.stdout).toContain('looking\n');
    expect(safe.outcome).toMatchObject({ status: 'succeeded', exitCode: 2, check: { verdict: 'would_change' } });
    const fails = await agent.run('shell', { cmd: 'exit 3', check_safe: true, retries: 0 }, CHECK);
    expect(fails.outcome).toMatchObject({ status: 'failed', exitCode: 3 });
    expect(fails.outcome.check).toBeUndefined();
  });

  it('reboot - never runs in a check', async () => {
    const r = await agent.run('reboot', {}, CHECK);
    expect(r.outcome.check).toEqual({ verdict: 'skipped', reason: 'a check run never reboots' });
  });

  it('sync - rsync --dry-run lists the changes; an up-to-date copy lists none', async () => {
    const dst = path.join(agent.allowed, 'tree/');
    const r = await agent.run('sync', { src: 'src/tree/', dst }, CHECK);
    expect(r.outcome.check).toMatchObject({ verdict: 'would_change' });
    expect(r.outcome.check?.diff).toContain('a.conf');
    expect(await fingerprint(path.join(agent.allowed, 'tree'))).toBe('absent');
    const real = await agent.run('sync', { src: 'src/tree/', dst });
    expect(real.outcome.status).toBe('succeeded');
    const again = await agent.run('sync', { src: 'src/tree/', dst }, CHECK);
    expect(again.outcome.check).toEqual({ verdict: 'no_change', reason: 'rsync --dry-run lists no change' });
  });

  it('puppet - --noop: pending changes read from its run report (it exits 0 either way), the file untouched', async () => {
    const target = path.join(agent.allowed, 'puppet.txt');
    await writeFile(target, 'old\n');
    const before = await fingerprint(target);
    await mkdir(path.join(agent.rootDir, 'pp'), { recursive: true });
    await writeFile(path.join(agent.rootDir, 'pp', 'differs.pp'), `file { '${target}': content => "new\\n" }\n`);
    await writeFile(path.join(agent.rootDir, 'pp', 'matches.pp'), `file { '${target}': content => "old\\n" }\n`);
    const differs = await agent.run('puppet', { puppet_manifest: 'pp/differs.pp' }, CHECK);
    expect(differs.outcome).toMatchObject({ status: 'succeeded', exitCode: 0, check: { verdict: 'would_change' } });
    expect(differs.outcome.check?.diff).toContain('+new');
    const matches = await agent.run('puppet', { puppet_manifest: 'pp/matches.pp' }, CHECK);
    expect(matches.outcome.check).toEqual({ verdict: 'no_change', reason: 'puppet --noop reports no pending change' });
    expect(await fingerprint(target)).toEqual(before);
  });
});
