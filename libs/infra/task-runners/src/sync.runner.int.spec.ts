import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { createConnection, createServer } from 'node:net';
import * as path from 'node:path';
import { waitUntil } from '@granule/messaging';
import { isRemoteRsyncPath } from './sync.runner';
import { createTempAgent, type TempAgent } from './testing/temp-agent.fixture';

jest.setTimeout(30_000);

let agent: TempAgent;
beforeEach(async () => {
  agent = await createTempAgent();
  await mkdir(path.join(agent.rootDir, 'src', 'sub'), { recursive: true });
  await writeFile(path.join(agent.rootDir, 'src', 'a.txt'), 'A');
  await writeFile(path.join(agent.rootDir, 'src', 'sub', 'b.txt'), 'B');
});
afterEach(() => agent.cleanup());

async function tree(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

describe('sync task', () => {
  it("'src/' copies the directory's contents into dst", async () => {
    const { outcome } = await agent.run('sync', { src: 'src/', dst: 'allowed/mirror' });
    expect(outcome).toMatchObject({ status: 'succeeded', exitCode: 0, attempts: 1 });
    expect(await tree(path.join(agent.allowed, 'mirror'))).toEqual(['a.txt', path.join('sub', 'b.txt')]);
  });

  it("'src' without a trailing slash copies the directory itself into dst", async () => {
    await agent.run('sync', { src: 'src', dst: 'allowed/mirror' });
    expect(await tree(path.join(agent.allowed, 'mirror'))).toEqual([
      path.join('src', 'a.txt'),
      path.join('src', 'sub', 'b.txt'),
    ]);
  });

  it('keeps files absent from src unless delete: true', async () => {
    const dst = path.join(agent.allowed, 'mirror');
    await mkdir(dst, { recursive: true });
    await writeFile(path.join(dst, 'stale.txt'), 'old');
    await agent.run('sync', { src: 'src/', dst: 'allowed/mirror' });
    expect(existsSync(path.join(dst, 'stale.txt'))).toBe(true);
    await agent.run('sync', { src: 'src/', dst: 'allowed/mirror', delete: true });
    expect(await tree(dst)).toEqual(['a.txt', path.join('sub', 'b.txt')]);
  });

  it('noop - a dry run lists what would change and writes nothing', async () => {
    const { outcome, stdout } = await agent.run('sync', { src: 'src/', dst: 'allowed/mirror/' }, { noop: true });
    expect(outcome.status).toBe('succeeded');
    expect(stdout).toContain('>f+++++++++ a.txt');
    expect(stdout).toContain('>f+++++++++ sub/b.txt');
    expect(existsSync(path.join(agent.allowed, 'mirror'))).toBe(false);
  });

  it('refuses a dst outside the allowed roots (via ..) and writes nothing', async () => {
    const { outcome } = await agent.run('sync', { src: 'src/', dst: 'allowed/../outside' });
    expect(outcome).toMatchObject({ status: 'failed', attempts: 0, errorCode: 'RUNNER_PATH_OUTSIDE_ROOTS' });
    expect(outcome.error).toBe(
      `sync dst 'allowed/../outside' is outside the allowed roots (${agent.allowed}); it resolves to '${path.join(agent.rootDir, 'outside')}'`,
    );
    expect(existsSync(path.join(agent.rootDir, 'outside'))).toBe(false);
  });

  it('refuses a dst whose parent is a symlink leading outside the allowed roots', async () => {
    await mkdir(path.join(agent.base, 'elsewhere'));
    await symlink(path.join(agent.base, 'elsewhere'), path.join(agent.allowed, 'link'));
    const { outcome } = await agent.run('sync', { src: 'src/', dst: 'allowed/link/mirror' });
    expect(outcome.errorCode).toBe('RUNNER_PATH_OUTSIDE_ROOTS');
    expect(outcome.error).toContain(`it resolves to '${path.join(agent.base, 'elsewhere', 'mirror')}'`);
    expect(await readdir(path.join(agent.base, 'elsewhere'))).toEqual([]);
  });

  it('refuses a remote dst', async () => {
    const { outcome } = await agent.run('sync', { src: 'src/', dst: 'master::puppet' });
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'RUNNER_BAD_PARAMETERS' });
    expect(outcome.error).toBe(
      "invalid sync parameters: parameters.dst: 'master::puppet' is remote; sync writes to this host only",
    );
  });

  it('a missing local src fails with rsync exit code 23 after the retries', async () => {
    const { outcome } = await agent.run('sync', { src: 'missing/', dst: 'allowed/mirror', retries: 1, interval: 0 });
    expect(outcome).toMatchObject({ status: 'failed', exitCode: 23, attempts: 2, error: 'rsync failed: exit code 23' });
  });

  describe('from an rsync daemon', () => {
    let daemon: ChildProcess;
    let port: number;
    beforeEach(async () => {
      port = await freePort();
      const conf = path.join(agent.base, 'rsyncd.conf');
      await writeFile(
        conf,
        `use chroot = no\npid file = ${agent.base}/rsyncd.pid\n[mod]\npath = ${agent.rootDir}/src\nread only = yes\n`,
      );
      daemon = spawn(
        'rsync',
        ['--daemon', '--no-detach', `--port=${port}`, '--address=127.0.0.1', `--config=${conf}`],
        { stdio: 'ignore' },
      );
      await waitUntil(() => listening(port), `the rsync daemon to listen on ${port}`, 5000);
    });
    afterEach(() => {
      daemon.kill('SIGTERM');
    });

    it('pulls an rsync:// URL as written', async () => {
      const { outcome } = await agent.run('sync', {
        src: `rsync://127.0.0.1:${port}/mod/`,
        dst: 'allowed/from-daemon',
      });
      expect(outcome).toMatchObject({ status: 'succeeded', exitCode: 0 });
      expect(await readFile(path.join(agent.allowed, 'from-daemon', 'sub', 'b.txt'), 'utf8')).toBe('B');
    });
  });
});

describe('isRemoteRsyncPath', () => {
  it.each([
    ['rsync://10.20.0.2:873/puppet/modules/', true],
    ['10.20.0.2::puppet/modules/', true],
    ['root@node-1:/etc/puppet', true],
    ['/etc/puppet/modules', false],
    ['modules/', false],
    ['./a:b', false],
  ])('%s -> %s', (value, expected) => {
    expect(isRemoteRsyncPath(value)).toBe(expected);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** True when something accepts a TCP connection on `port` of 127.0.0.1. */
function listening(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' }, () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
