import { execFileSync, spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { waitUntil } from '@granule/messaging';
import { AgentProcessSpawner, NATIVE_SPAWN_HELPER } from './agent-process-spawner';
import { planLaunch, type LaunchPlan, type ProcessSpec } from './launch-plan';
import { frameDecoder, type HelperMessage } from './native-helper.protocol';
import { processStartTime } from './process-spawner';
import { createTempAgent, processAlive, type TempAgent } from './testing/temp-agent.fixture';

jest.setTimeout(30_000);

// The native helper is built as `npm run build` builds it (a no-op when it is up to date).
beforeAll(() => {
  execFileSync(process.execPath, [path.join(__dirname, '../../../../tools/build-native.mjs')], { stdio: 'inherit' });
});

let spawner: AgentProcessSpawner;
let agent: TempAgent;
afterEach(async () => {
  spawner.close();
  await agent.cleanup();
});

const plan = (spec: ProcessSpec): LaunchPlan => planLaunch(spec, { timeoutMs: null, killGraceMs: 500 });
const readPid = async (file: string): Promise<number> => Number((await readFile(file, 'utf8')).trim());

describe.each([
  ['native', 'the native helper'],
  ['node', "Node.js's child_process in the agent"],
] as const)('AgentProcessSpawner %s: the launch plan executed by %s', (helper, _executor) => {
  /** The parent of every task process: the helper, or this process. */
  const parentPid = (): number | undefined => (helper === 'native' ? spawner.helperPid : process.pid);

  beforeEach(async () => {
    spawner = new AgentProcessSpawner({ helper });
    agent = await createTempAgent({ spawner });
  });

  it('runs shell tasks as children of the executor, each leading its own group, with output, exit code, cwd and env', async () => {
    const { outcome, stdout, stderr } = await agent.run('shell', {
      cmd: 'echo "ppid=$PPID pgid=$(ps -o pgid= $$ | tr -d " ") pid=$$ cwd=$(pwd) v=$V"; echo oops >&2; exit 0',
      env: { V: 'from-env' },
    });
    expect(outcome).toMatchObject({ status: 'succeeded', exitCode: 0, attempts: 1 });
    const fields = Object.fromEntries(
      stdout
        .trim()
        .split(' ')
        .map((kv) => kv.split('=')),
    );
    expect(Number(fields.ppid)).toBe(parentPid());
    expect(fields.pgid).toBe(fields.pid); // leader of its own process group
    expect([fields.cwd, fields.v]).toEqual([agent.rootDir, 'from-env']);
    expect(stderr).toBe('oops\n');

    const failed = await agent.run('shell', { cmd: 'exit 7', retries: 0 });
    expect(failed.outcome).toMatchObject({ status: 'failed', exitCode: 7, error: 'shell command failed: exit code 7' });
  });

  it('keeps large output and multi-byte text intact across the process boundary', async () => {
    const { stdout } = await agent.run('shell', {
      cmd: 'head -c 300000 /dev/zero | tr "\\0" x; printf "\\n%s\\n" "é ü end"',
    });
    expect(stdout.length).toBe(300000 + '\né ü end\n'.length);
    expect(stdout.endsWith('\né ü end\n')).toBe(true);
  });

  it('a timeout kills the whole process group, background children included', async () => {
    const pidFile = path.join(agent.rootDir, 'bg.pid');
    const { outcome } = await agent.run('shell', {
      cmd: `sleep 30 & echo $! > '${pidFile}'; sleep 30`,
      timeout: 1,
      retries: 0,
    });
    expect(outcome).toMatchObject({ status: 'timed_out', signal: 'SIGTERM', errorCode: 'RUNNER_TIMED_OUT' });
    expect(processAlive(await readPid(pidFile))).toBe(false);
  });

  it('a command that cannot be started fails the attempt with the reason', async () => {
    const spawned = await spawner.spawn(
      plan({ command: '/nonexistent/binary', args: [], cwd: agent.rootDir, env: {} }),
      () => undefined,
    );
    expect(spawned.pid).toBeUndefined();
    const exit = await spawned.exited;
    expect(exit.spawnError).toMatchObject({ code: 'ENOENT', message: 'spawn /nonexistent/binary ENOENT' });
  });

  it('after close a spawn fails with a clear error (and the native helper exits)', async () => {
    await agent.run('shell', { cmd: 'true' });
    const helperPid = spawner.helperPid;
    expect(helperPid === undefined).toBe(helper === 'node');
    spawner.close();
    if (helperPid !== undefined) await waitUntil(() => !processAlive(helperPid), 'the helper to exit', 5000);
    const { outcome } = await agent.run('shell', { cmd: 'true', retries: 0 });
    expect(outcome).toMatchObject({
      status: 'failed',
      errorCode: 'RUNNER_SPAWN_FAILED',
      error: 'cannot start shell command: the spawn helper is closed',
    });
  });
  it("reports the leader's start time, as /proc has it", async () => {
    const spawned = await spawner.spawn(
      plan({ command: '/bin/sh', args: ['-c', 'sleep 0.3'], cwd: agent.rootDir, env: {} }),
      () => undefined,
    );
    expect(spawned.pid).toBeGreaterThan(0);
    expect(spawned.startTime).toBe(processStartTime(spawned.pid as number));
    expect(await spawned.exited).toEqual({ exitCode: 0, signal: null });
  });

  it("finds a bare command name on the task's own PATH, and fails a missing working directory with ENOENT", async () => {
    const bin = path.join(agent.base, 'bin');
    await mkdir(bin);
    await writeFile(path.join(bin, 'granule-hello'), '#!/bin/sh\necho "hello $1"\n');
    await chmod(path.join(bin, 'granule-hello'), 0o755);
    let out = '';
    const spawned = await spawner.spawn(
      plan({ command: 'granule-hello', args: ['world'], cwd: agent.rootDir, env: { PATH: `${bin}:/usr/bin:/bin` } }),
      (_s, d) => (out += d.toString()),
    );
    expect(await spawned.exited).toEqual({ exitCode: 0, signal: null });
    expect(out).toBe('hello world\n');

    const noCwd = await spawner.spawn(
      plan({ command: '/bin/true', args: [], cwd: path.join(agent.base, 'missing'), env: {} }),
      () => undefined,
    );
    expect(noCwd.pid).toBeUndefined();
    expect((await noCwd.exited).spawnError).toMatchObject({ code: 'ENOENT' });
  });

  it('reports a signal death by name, and ends a task whose background child holds the output open after the drain time', async () => {
    const killed = await spawner.spawn(
      plan({ command: '/bin/sh', args: ['-c', 'kill -USR1 $$'], cwd: agent.rootDir, env: {} }),
      () => undefined,
    );
    expect(await killed.exited).toEqual({ exitCode: null, signal: 'SIGUSR1' });

    const started = Date.now();
    const held = await spawner.spawn(
      plan({ command: '/bin/sh', args: ['-c', 'sleep 20 & echo leader done'], cwd: agent.rootDir, env: {} }),
      () => undefined,
    );
    expect(await held.exited).toEqual({ exitCode: 0, signal: null });
    expect(Date.now() - started).toBeLessThan(15_000); // the drain time (1 s), not the 20 s of the child
    held.signalGroup('SIGKILL');
  });

  it('runs tasks side by side, each with its own output and outcome', async () => {
    const results = await Promise.all(
      [1, 2, 3, 4].map((n) => agent.run('shell', { cmd: `sleep 0.${n}; echo task-${n}; exit ${n}`, retries: 0 })),
    );
    expect(results.map((r) => [r.stdout, r.outcome.exitCode])).toEqual([1, 2, 3, 4].map((n) => [`task-${n}\n`, n]));
  });

  it("honours the plan's drain time and session: output after the leader's exit is kept only while the plan drains", async () => {
    const late = plan({ command: '/bin/sh', args: ['-c', '(sleep 0.5; echo late) & echo early'], cwd: '/', env: {} });
    const collect = async (p: LaunchPlan): Promise<string> => {
      let out = '';
      const spawned = await spawner.spawn(p, (_s, d) => (out += d.toString()));
      expect(await spawned.exited).toEqual({ exitCode: 0, signal: null });
      spawned.signalGroup('SIGKILL');
      return out;
    };
    expect(await collect({ ...late, drainMs: 0 })).toBe('early\n');
    expect(await collect({ ...late, drainMs: 10_000 })).toBe('early\nlate\n'); // ends when the pipes close

    let out = '';
    const inParentGroup = await spawner.spawn(
      {
        ...plan({ command: '/bin/sh', args: ['-c', 'ps -o pgid= $$'], cwd: '/', env: { PATH: '/usr/bin:/bin' } }),
        newSession: false,
      },
      (_s, d) => (out += d.toString()),
    );
    await inParentGroup.exited;
    expect(Number(out.trim())).not.toBe(inParentGroup.pid);
  });

  it('a command with a NUL byte is refused before it reaches the executor, as a start failure', async () => {
    const { outcome } = await agent.run('shell', { cmd: 'echo a\0b', retries: 0 });
    expect(outcome).toMatchObject({
      status: 'failed',
      attempts: 1,
      errorCode: 'RUNNER_SPAWN_FAILED',
      error:
        'cannot start shell command: spawn /bin/bash: a command, argument, directory or environment entry contains a NUL byte',
    });
  });
});

describe('AgentProcessSpawner with the native helper', () => {
  beforeEach(async () => {
    spawner = new AgentProcessSpawner({ helper: 'native' });
    agent = await createTempAgent({ spawner });
  });

  it('starts task processes from granule-spawn', async () => {
    expect(spawner.helperKind).toBe('native');
    await spawner.start();
    expect(await readFile(`/proc/${spawner.helperPid}/cmdline`, 'latin1')).toContain('granule-spawn');
  });

  it('when the helper dies mid-task the task group is killed, the task ends killed with a note, and the next task gets a new helper', async () => {
    const pidFile = path.join(agent.rootDir, 'task.pid');
    const running = agent.run('shell', { cmd: `echo $$ > '${pidFile}'; sleep 30`, retries: 0 });
    await waitUntil(
      async () => (await readFile(pidFile, 'utf8').catch(() => '')).endsWith('\n'),
      'the task to start',
      5000,
    );
    const taskPid = await readPid(pidFile);
    const firstHelper = spawner.helperPid as number;
    process.kill(firstHelper, 'SIGKILL');

    const { outcome, stderr } = await running;
    expect(outcome).toMatchObject({
      status: 'failed',
      exitCode: null,
      signal: 'SIGKILL',
      error: 'shell command was killed by SIGKILL',
    });
    expect(stderr).toContain(
      'the spawn helper process exited (SIGKILL) while the task ran; its process group was killed',
    );
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
});

describe('AgentProcessSpawner choice', () => {
  it('auto takes the native helper when it is built; native without the binary fails start and every spawn clearly', async () => {
    expect(new AgentProcessSpawner().helperKind).toBe('native');
    expect(new AgentProcessSpawner({ helper: 'node' }).helperKind).toBe('node');
    const missing = path.join(__dirname, 'no-such-granule-spawn');
    expect(new AgentProcessSpawner({ nativeBinary: missing }).helperKind).toBe('node');

    const strict = new AgentProcessSpawner({ helper: 'native', nativeBinary: missing });
    expect(strict.helperKind).toBe('missing');
    await expect(strict.start()).rejects.toThrow(`the native spawn helper ${missing} is not built`);
    const spawned = await strict.spawn(plan({ command: '/bin/true', args: [], cwd: '/', env: {} }), () => undefined);
    expect(spawned.pid).toBeUndefined();
    expect((await spawned.exited).spawnError?.message).toBe(`the native spawn helper ${missing} is not built`);
    expect(NATIVE_SPAWN_HELPER.endsWith(path.join('native', 'build', 'granule-spawn'))).toBe(true);
  });

  it("a native helper that cannot be started: auto falls back to Node.js's child_process, native fails clearly instead of hanging", async () => {
    const notAProgram = await mkdtemp(path.join(tmpdir(), 'granule-not-a-helper-')); // a directory: executable bit, but exec fails
    const notExecutable = path.join(notAProgram, 'plain-file');
    await writeFile(notExecutable, 'not a program');
    try {
      expect(new AgentProcessSpawner({ nativeBinary: notExecutable }).helperKind).toBe('node');

      const auto = new AgentProcessSpawner({ nativeBinary: notAProgram });
      expect(auto.helperKind).toBe('native');
      await auto.start();
      expect(auto.helperKind).toBe('node');
      let out = '';
      const spawned = await auto.spawn(
        plan({ command: '/bin/sh', args: ['-c', 'echo $PPID'], cwd: '/', env: {} }),
        (_s, d) => (out += d.toString()),
      );
      expect(await spawned.exited).toEqual({ exitCode: 0, signal: null });
      expect(Number(out.trim())).toBe(process.pid);
      expect(auto.helperPid).toBeUndefined();
      auto.close();

      const strict = new AgentProcessSpawner({ helper: 'native', nativeBinary: notAProgram });
      await expect(strict.start()).rejects.toThrow(/^the spawn helper could not be started: spawn .* EACCES$/);
      const failed = await strict.spawn(plan({ command: '/bin/true', args: [], cwd: '/', env: {} }), () => undefined);
      expect(failed.pid).toBeUndefined();
      expect((await failed.exited).spawnError?.message).toMatch(
        /^the spawn helper could not be started: spawn .* EACCES$/,
      );
      expect(strict.helperKind).toBe('native');
      strict.close();
    } finally {
      await rm(notAProgram, { recursive: true, force: true });
    }
  });
});

describe('granule-spawn protocol', () => {
  it('answers a malformed spawn request with an error for its id instead of leaving it unanswered', async () => {
    const helper = spawn(NATIVE_SPAWN_HELPER, [], { stdio: ['pipe', 'pipe', 'inherit'] });
    const messages: HelperMessage[] = [];
    helper.stdout.on(
      'data',
      frameDecoder((m) => messages.push(m)),
    );
    const frame = Buffer.alloc(4 + 1 + 4 + 12);
    frame.writeUInt32LE(frame.length - 4, 0);
    frame.write('S', 4, 'latin1');
    frame.writeUInt32LE(42, 5);
    frame.writeUInt32LE(1, 9); // flags, drain time, argc, and then nothing: no envc, no strings
    frame.writeUInt32LE(1000, 13);
    frame.writeUInt32LE(1, 17);
    helper.stdin.write(frame);
    const deadline = Date.now() + 5000;
    while (messages.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    helper.stdin.end();
    await new Promise((r) => helper.once('close', r));
    expect(messages).toEqual([{ t: 'ready' }, { t: 'exit', id: 42, code: null, signal: null, startError: 'EINVAL' }]);
  });
});
