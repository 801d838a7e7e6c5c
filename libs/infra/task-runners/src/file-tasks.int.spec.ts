import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { createTempAgent, type TempAgent } from './testing/temp-agent.fixture';

let agent: TempAgent;
beforeEach(async () => {
  agent = await createTempAgent();
});
afterEach(() => agent.cleanup());

const modeOf = async (file: string): Promise<number> => (await stat(file)).mode & 0o7777;

describe('upload_file task', () => {
  it('writes the data with mode 0644 by default, creating parent directories', async () => {
    const { outcome, stdout } = await agent.run('upload_file', {
      path: 'allowed/etc/app/app.conf',
      data: 'key=value\n',
    });
    const file = path.join(agent.allowed, 'etc', 'app', 'app.conf');
    expect(outcome).toMatchObject({ status: 'succeeded', exitCode: 0, attempts: 1 });
    expect(await readFile(file, 'utf8')).toBe('key=value\n');
    expect(await modeOf(file)).toBe(0o644);
    expect(stdout).toBe(`wrote ${file} (10 bytes, mode 0644)\n`);
  });

  it("applies permissions given as '0600' text or as a number written 0755", async () => {
    await agent.run('upload_file', { path: `${agent.allowed}/secret`, data: 's', permissions: '0600' });
    await agent.run('upload_file', { path: `${agent.allowed}/tool.sh`, data: '#!/bin/sh\n', permissions: 755 });
    expect(await modeOf(path.join(agent.allowed, 'secret'))).toBe(0o600);
    expect(await modeOf(path.join(agent.allowed, 'tool.sh'))).toBe(0o755);
  });

  it('replaces an existing file atomically: same directory, no temp file left, new inode', async () => {
    const file = path.join(agent.allowed, 'data.txt');
    await writeFile(file, 'old');
    const before = (await stat(file)).ino;
    await agent.run('upload_file', { path: file, data: '' });
    expect(await readFile(file, 'utf8')).toBe('');
    expect((await stat(file)).ino).not.toBe(before); // renamed over, not rewritten in place
    expect(await readdir(agent.allowed)).toEqual(['data.txt']);
  });

  it("refuses '/etc/passwd' with a message naming the allowed roots, and writes nothing", async () => {
    const { outcome, stderr } = await agent.run('upload_file', { path: '/etc/passwd', data: 'x' });
    expect(outcome).toMatchObject({
      status: 'failed',
      exitCode: null,
      attempts: 0,
      errorCode: 'RUNNER_PATH_OUTSIDE_ROOTS',
    });
    expect(outcome.error).toBe(`upload_file path '/etc/passwd' is outside the allowed roots (${agent.allowed})`);
    expect(stderr).toBe(`[granule] ${outcome.error}\n`);
  });

  it('refuses a path that escapes through a symlinked directory', async () => {
    const outside = path.join(agent.base, 'outside');
    await mkdir(outside);
    await symlink(outside, path.join(agent.allowed, 'escape'));
    const { outcome } = await agent.run('upload_file', { path: 'allowed/escape/new/file.txt', data: 'x' });
    expect(outcome.error).toBe(
      `upload_file path 'allowed/escape/new/file.txt' is outside the allowed roots (${agent.allowed}); it resolves to '${path.join(outside, 'new', 'file.txt')}'`,
    );
    expect(await readdir(outside)).toEqual([]);
  });

  it('refuses everything when no allowed root is configured', async () => {
    const { runTask } = await import('./task-runner');
    const outcome = await runTask(
      { runId: 'r', taskId: 't', nodeUid: 'n', type: 'upload_file', parameters: { path: 'f', data: 'x' } },
      { ...agent.ctx, allowedRoots: [] },
    );
    expect(outcome.error).toBe(
      `upload_file path 'f' is outside the allowed roots (none configured); it resolves to '${path.join(agent.rootDir, 'f')}'`,
    );
  });

  it('noop - reports what it would write and writes nothing', async () => {
    const { outcome, stdout } = await agent.run(
      'upload_file',
      { path: 'allowed/x.conf', data: 'héllo', permissions: '0640' },
      { noop: true },
    );
    expect(outcome).toMatchObject({ status: 'succeeded', attempts: 0 });
    expect(stdout).toBe(`would write ${path.join(agent.allowed, 'x.conf')} (6 bytes, mode 0640)\n`);
    expect(existsSync(path.join(agent.allowed, 'x.conf'))).toBe(false);
  });

  it('bad parameters - lists every problem', async () => {
    const { outcome } = await agent.run('upload_file', { data: 3, permissions: '0999' });
    expect(outcome.error).toBe(
      'invalid upload_file parameters: parameters.path is missing; parameters.data: expected a string, got 3; parameters.permissions: expected a mode like \'0644\', got "0999"',
    );
  });

  it('refuses to replace a directory', async () => {
    await mkdir(path.join(agent.allowed, 'dir'));
    const { outcome } = await agent.run('upload_file', { path: 'allowed/dir', data: 'x' });
    expect(outcome).toMatchObject({
      status: 'failed',
      errorCode: 'RUNNER_IO_FAILED',
      error: `upload_file path '${path.join(agent.allowed, 'dir')}' is a directory`,
    });
  });
});

describe('copy_files task', () => {
  beforeEach(async () => {
    await mkdir(path.join(agent.rootDir, 'files'));
    await writeFile(path.join(agent.rootDir, 'files', 'one'), '1');
    await writeFile(path.join(agent.rootDir, 'files', 'two'), '22');
  });

  it('copies each file with its own or the task default mode', async () => {
    const { outcome, stdout } = await agent.run('copy_files', {
      permissions: '0600',
      files: [
        { src: 'files/one', dst: 'allowed/a/one' },
        { src: 'files/two', dst: 'allowed/b/two', permissions: '0755' },
      ],
    });
    expect(outcome).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(await readFile(path.join(agent.allowed, 'a', 'one'), 'utf8')).toBe('1');
    expect(await readFile(path.join(agent.allowed, 'b', 'two'), 'utf8')).toBe('22');
    expect(await modeOf(path.join(agent.allowed, 'a', 'one'))).toBe(0o600);
    expect(await modeOf(path.join(agent.allowed, 'b', 'two'))).toBe(0o755);
    expect(stdout).toBe(
      `copied ${path.join(agent.rootDir, 'files', 'one')} -> ${path.join(agent.allowed, 'a', 'one')} (mode 0600)\n` +
        `copied ${path.join(agent.rootDir, 'files', 'two')} -> ${path.join(agent.allowed, 'b', 'two')} (mode 0755)\n`,
    );
  });

  it('names the file that failed; the files before it stay copied', async () => {
    const { outcome } = await agent.run('copy_files', {
      files: [
        { src: 'files/one', dst: 'allowed/one' },
        { src: 'files/missing', dst: 'allowed/missing' },
        { src: 'files/two', dst: 'allowed/two' },
      ],
    });
    expect(outcome).toMatchObject({ status: 'failed', attempts: 1, errorCode: 'RUNNER_IO_FAILED' });
    expect(outcome.error).toMatch(
      /^copy_files file 2 of 3 \('.*\/files\/missing' -> 'allowed\/missing'\) failed: ENOENT/,
    );
    expect((await readdir(agent.allowed)).sort()).toEqual(['one']);
  });

  it('checks every destination before copying anything and reports each refused one', async () => {
    const { outcome } = await agent.run('copy_files', {
      files: [
        { src: 'files/one', dst: 'allowed/one' },
        { src: 'files/one', dst: '/etc/one' },
        { src: 'files/two', dst: '../two' },
      ],
    });
    expect(outcome).toMatchObject({ status: 'failed', attempts: 0, errorCode: 'RUNNER_PATH_OUTSIDE_ROOTS' });
    expect(outcome.error).toBe(
      `copy_files files[1].dst '/etc/one' is outside the allowed roots (${agent.allowed})\n` +
        `copy_files files[2].dst '../two' is outside the allowed roots (${agent.allowed}); it resolves to '${path.join(agent.base, 'two')}'`,
    );
    expect(await readdir(agent.allowed)).toEqual([]);
  });

  it('bad parameters - names the entry and key', async () => {
    const { outcome } = await agent.run('copy_files', { files: [{ src: 'files/one' }, 'x'] });
    expect(outcome.error).toBe(
      'invalid copy_files parameters: parameters.files[0].dst is missing; parameters.files[1]: expected {src, dst, permissions?}',
    );
  });
});
