import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { HelperProcessSpawner } from './helper-process-spawner';
import { createTempAgent, processAlive, type TempAgent } from './testing/temp-agent.fixture';

jest.setTimeout(30_000);

let spawner: HelperProcessSpawner;
let agent: TempAgent;
beforeEach(async () => {
  spawner = new HelperProcessSpawner();
  agent = await createTempAgent({ spawner });
});
afterEach(async () => {
  spawner.close();
  await agent.cleanup();
});

const readPid = async (file: string): Promise<number> => Number((await readFile(file, 'utf8')).trim());

async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('HelperProcessSpawner (tasks started by the spawn helper process)', () => {
  it('runs shell tasks as children of the helper, not of the agent, with output, exit code, cwd and env', async () => {
    const { outcome, stdout, stderr } = await agent.run('shell', { cmd: 'echo "ppid=$PPID pgid=$(ps -o pgid= $$ | tr -d " ") pid=$$ cwd=$(pwd) v=$V"; echo oops >&2; exit 0', env: { V: 'from-env' } });
    expect(outcome).toMatchObject({ status: 'succeeded', exitCode: 0, attempts: 1 });
    const fields = Object.fromEntries(stdout.trim().split(' ').map((kv) => kv.split('=')));
    expect(Number(fields.ppid)).toBe(spawner.helperPid);
    expect(Number(fields.ppid)).not.toBe(process.pid);
    expect(fields.pgid).toBe(fields.pid); // leader of its own process group
    expect([fields.cwd, fields.v]).toEqual([agent.rootDir, 'from-env']);
    expect(stderr).toBe('oops\n');

    const failed = await agent.run('shell', { cmd: 'exit 7', retries: 0 });
    expect(failed.outcome).toMatchObject({ status: 'failed', exitCode: 7, error: 'shell command failed: exit code 7' });
  });

  it('keeps large output and multi-byte text intact across the process boundary', async () => {
    const { stdout } = await agent.run('shell', { cmd: 'head -c 300000 /dev/zero | tr "\\0" x; printf "\\n%s\\n" "é ü end"' });
    expect(stdout.length).toBe(300000 + '\né ü end\n'.length);
    expect(stdout.endsWith('\né ü end\n')).toBe(true);
  });

  it('a timeout kills the whole process group, background children included', async () => {
    const pidFile = path.join(agent.rootDir, 'bg.pid');
    const { outcome } = await agent.run('shell', { cmd: `sleep 30 & echo $! > '${pidFile}'; sleep 30`, timeout: 1, retries: 0 });
    expect(outcome).toMatchObject({ status: 'timed_out', signal: 'SIGTERM', errorCode: 'RUNNER_TIMED_OUT' });
    expect(processAlive(await readPid(pidFile))).toBe(false);
  });

  it('a command that cannot be started fails the attempt with the reason', async () => {
    const spawned = await spawner.spawn({ command: '/nonexistent/binary', args: [], cwd: agent.rootDir, env: {} }, () => undefined);
    expect(spawned.pid).toBeUndefined();
    const exit = await spawned.exited;
    expect(exit.spawnError?.message).toContain('ENOENT');
  });

  it('when the helper dies mid-task the task group is killed, the task ends killed with a note, and the next task gets a new helper', async () => {
    const pidFile = path.join(agent.rootDir, 'task.pid');
    const running = agent.run('shell', { cmd: `echo $$ > '${pidFile}'; sleep 30`, retries: 0 });
    await waitFor('the task to start', async () => (await readFile(pidFile, 'utf8').catch(() => '')).endsWith('\n'));
    const taskPid = await readPid(pidFile);
    const firstHelper = spawner.helperPid as number;
    process.kill(firstHelper, 'SIGKILL');

    const { outcome, stderr } = await running;
    expect(outcome).toMatchObject({ status: 'failed', exitCode: null, signal: 'SIGKILL', error: 'shell command was killed by SIGKILL' });
    expect(stderr).toContain('the spawn helper process exited (SIGKILL) while the task ran; its process group was killed');
    expect(processAlive(taskPid)).toBe(false);

    const next = await agent.run('shell', { cmd: 'echo again' });
    expect(next.stdout).toBe('again\n');
    expect(spawner.helperPid).not.toBe(firstHelper);
  });

  it('start() boots the helper ahead of the first task and is a no-op once it runs', async () => {
    expect(spawner.helperPid).toBeUndefined();
    await spawner.start();
    const helper = spawner.helperPid as number;
    expect(processAlive(helper)).toBe(true);
    await spawner.start();
    const { stdout } = await agent.run('shell', { cmd: 'echo $PPID' });
    expect(Number(stdout.trim())).toBe(helper);
  });

  it('after close the helper exits and a spawn fails with a clear error', async () => {
    await agent.run('shell', { cmd: 'true' });
    const helper = spawner.helperPid as number;
    spawner.close();
    await waitFor('the helper to exit', () => !processAlive(helper));
    const { outcome } = await agent.run('shell', { cmd: 'true', retries: 0 });
    expect(outcome).toMatchObject({ status: 'failed', errorCode: 'RUNNER_SPAWN_FAILED', error: 'cannot start shell command: the spawn helper is closed' });
  });
});
