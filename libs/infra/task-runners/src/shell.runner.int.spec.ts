import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { runTask, TaskRunner } from './task-runner';
import type { OutputChunk } from './task-runner.types';
import { createTempAgent, processAlive, type TempAgent } from './testing/temp-agent.fixture';

jest.setTimeout(30_000);

let agent: TempAgent;
beforeEach(async () => {
  agent = await createTempAgent({ env: { FROM_CONTEXT: 'ctx-value' }, outputChunkBytes: 1024, outputTailBytes: 2048 });
});
afterEach(() => agent.cleanup());

async function readPid(file: string): Promise<number> {
  return Number((await readFile(file, 'utf8')).trim());
}

describe('shell task', () => {
  it('success - reports exit code 0, one attempt, stdout and stderr apart', async () => {
    const { outcome, stdout, stderr } = await agent.run('shell', { cmd: 'echo hello; echo oops >&2' });
    expect(outcome).toMatchObject({ status: 'succeeded', exitCode: 0, attempts: 1 });
    expect(outcome.error).toBeUndefined();
    expect(stdout).toBe('hello\n');
    expect(stderr).toBe('oops\n');
    expect(outcome.outputTail).toContain('hello\n');
  });

  it('failure - runs 1 + retries attempts, then fails with the last exit code', async () => {
    const log = path.join(agent.rootDir, 'attempts.log');
    const { outcome, stderr } = await agent.run('shell', {
      cmd: `echo run >> '${log}'; exit 3`,
      retries: 2,
      interval: 0,
    });
    expect(outcome).toMatchObject({
      status: 'failed',
      exitCode: 3,
      attempts: 3,
      error: 'shell command failed: exit code 3',
      errorCode: 'RUNNER_EXIT_FAILED',
    });
    expect(await readFile(log, 'utf8')).toBe('run\nrun\nrun\n');
    expect(stderr).toBe(
      '[granule] attempt 1 of 3 failed (shell command failed: exit code 3); retrying in 0s\n' +
        '[granule] attempt 2 of 3 failed (shell command failed: exit code 3); retrying in 0s\n',
    );
  });

  it('tries - the output of each try carries its number, and every failed try that is run again is told with its exit code', async () => {
    const count = path.join(agent.rootDir, 'count');
    const chunks: OutputChunk[] = [];
    const failed: unknown[] = [];
    const outcome = await runTask(
      {
        runId: 'run-1',
        taskId: 'flaky',
        nodeUid: 'node-1',
        type: 'shell',
        parameters: {
          cmd: `n=$(cat '${count}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '${count}'; echo "try $n"; [ $n -ge 3 ] || exit $((n+4))`,
          retries: 3,
          interval: 0,
        },
      },
      agent.ctx,
      (c) => chunks.push(c),
      undefined,
      { onTryFailed: (f) => failed.push(f) },
    );
    expect(outcome).toMatchObject({ status: 'succeeded', attempts: 3 });
    expect(failed).toEqual([
      expect.objectContaining({
        try: 1,
        tries: 4,
        exitCode: 5,
        timedOut: false,
        error: 'shell command failed: exit code 5',
      }),
      expect.objectContaining({ try: 2, tries: 4, exitCode: 6, timedOut: false }),
    ]);
    const stdoutOf = (t: number): string =>
      chunks
        .filter((c) => c.try === t && c.stream === 'stdout')
        .map((c) => c.data)
        .join('');
    expect([stdoutOf(1), stdoutOf(2), stdoutOf(3)]).toEqual(['try 1\n', 'try 2\n', 'try 3\n']);
    // The runner's note about a failed try belongs to that try.
    expect(
      chunks
        .filter((c) => c.try === 1 && c.stream === 'stderr')
        .map((c) => c.data)
        .join(''),
    ).toContain('attempt 1 of 4 failed');
  });

  it('default retries - a failing command runs 3 times (SHELL_DEFAULTS.retries = 2)', async () => {
    const log = path.join(agent.rootDir, 'attempts.log');
    const { outcome } = await agent.run('shell', { cmd: `echo run >> '${log}'; false`, interval: 0 });
    expect(outcome.attempts).toBe(3);
    expect((await readFile(log, 'utf8')).split('\n').filter(Boolean)).toHaveLength(3);
  });

  it('retry - stops at the first attempt that succeeds', async () => {
    const log = path.join(agent.rootDir, 'attempts.log');
    const { outcome } = await agent.run('shell', {
      cmd: `echo run >> '${log}'; [ $(wc -l < '${log}') -ge 2 ]`,
      retries: 5,
      interval: 0,
    });
    expect(outcome).toMatchObject({ status: 'succeeded', exitCode: 0, attempts: 2 });
    expect(await readFile(log, 'utf8')).toBe('run\nrun\n');
  });

  it('timeout - kills the whole process group, background children included, and reports timed_out', async () => {
    const pidFile = path.join(agent.rootDir, 'bg.pid');
    const { outcome, stderr } = await agent.run('shell', {
      cmd: `sleep 30 & echo $! > '${pidFile}'; sleep 30`,
      timeout: 1,
      retries: 0,
    });
    expect(outcome).toMatchObject({
      status: 'timed_out',
      exitCode: null,
      signal: 'SIGTERM',
      attempts: 1,
      errorCode: 'RUNNER_TIMED_OUT',
    });
    expect(outcome.error).toBe('shell command timed out after 1s; its process group was killed');
    expect(outcome.durationMs).toBeGreaterThanOrEqual(1000);
    expect(outcome.durationMs).toBeLessThan(2500);
    expect(processAlive(await readPid(pidFile))).toBe(false);
    expect(stderr).toContain('[granule] shell command timed out after 1s');
  });

  it('timeout - a group that ignores SIGTERM is SIGKILLed after the grace period', async () => {
    const pidFile = path.join(agent.rootDir, 'bg.pid');
    const { outcome } = await agent.run('shell', {
      cmd: `trap '' TERM; sleep 30 & echo $! > '${pidFile}'; sleep 30`,
      timeout: 1,
      retries: 0,
    });
    expect(outcome).toMatchObject({ status: 'timed_out', signal: 'SIGKILL' });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(1500); // 1 s timeout + 0.5 s grace
    expect(outcome.durationMs).toBeLessThan(3000);
    expect(processAlive(await readPid(pidFile))).toBe(false);
  });

  it('timeout - a timed-out attempt is retried like a failed one', async () => {
    const log = path.join(agent.rootDir, 'attempts.log');
    const { outcome } = await agent.run('shell', {
      cmd: `echo run >> '${log}'; sleep 30`,
      timeout: 0.5,
      retries: 1,
      interval: 0,
    });
    expect(outcome).toMatchObject({ status: 'timed_out', attempts: 2 });
    expect(await readFile(log, 'utf8')).toBe('run\nrun\n');
  });

  it('cwd - defaults to the root dir; a relative cwd is resolved against it', async () => {
    await mkdir(path.join(agent.rootDir, 'work', 'sub'), { recursive: true });
    expect((await agent.run('shell', { cmd: 'pwd' })).stdout).toBe(`${agent.rootDir}\n`);
    expect((await agent.run('shell', { cmd: 'pwd', cwd: 'work/sub' })).stdout).toBe(
      `${path.join(agent.rootDir, 'work', 'sub')}\n`,
    );
  });

  it('cwd - a missing directory fails before running anything', async () => {
    const { outcome } = await agent.run('shell', { cmd: 'true', cwd: 'nope' });
    expect(outcome).toMatchObject({ status: 'failed', attempts: 0, errorCode: 'RUNNER_IO_FAILED' });
    expect(outcome.error).toBe(
      `shell cwd 'nope' is not a directory (resolved to '${path.join(agent.rootDir, 'nope')}')`,
    );
  });

  it('env - task env over context env over the agent environment, plus GRANULE_* variables', async () => {
    const { stdout } = await agent.run(
      'shell',
      {
        cmd: 'echo "$TASK_VAR|$FROM_CONTEXT|$NUM|$GRANULE_RUN_ID|$GRANULE_TASK_ID|$GRANULE_NODE_UID|$GRANULE_ROOT|${PATH:+has-path}"',
        env: { TASK_VAR: 'task', NUM: 7 },
      },
      { taskId: 'configure' },
    );
    expect(stdout).toBe(`task|ctx-value|7|run-1|configure|node-1|${agent.rootDir}|has-path\n`);
  });

  it('env - inheritedEnv replaces the agent environment; a TaskRunner keeps the environment it was made with', async () => {
    const seen: OutputChunk[] = [];
    const ctx = { ...agent.ctx, inheritedEnv: { PATH: process.env.PATH ?? '/usr/bin:/bin', ONLY: 'inherited' } };
    await runTask(
      {
        runId: 'run-1',
        taskId: 'only',
        nodeUid: 'node-1',
        type: 'shell',
        parameters: { cmd: 'echo "${HOME:-no-home}|$ONLY|$FROM_CONTEXT"' },
      },
      ctx,
      (c) => seen.push(c),
    );
    expect(seen.map((c) => c.data).join('')).toBe('no-home|inherited|ctx-value\n');

    process.env.GRANULE_TEST_SNAPSHOT = 'before';
    try {
      const runner = new TaskRunner(agent.ctx);
      process.env.GRANULE_TEST_SNAPSHOT = 'after';
      const chunks: OutputChunk[] = [];
      const outcome = await runner.run(
        {
          runId: 'run-1',
          taskId: 'snap',
          nodeUid: 'node-1',
          type: 'shell',
          parameters: { cmd: 'echo "$GRANULE_TEST_SNAPSHOT"' },
        },
        (c) => chunks.push(c),
      );
      expect(outcome.status).toBe('succeeded');
      expect(chunks.map((c) => c.data).join('')).toBe('before\n');
    } finally {
      delete process.env.GRANULE_TEST_SNAPSHOT;
    }
  });

  it('output - streams chunks of at most outputChunkBytes in order and keeps only the tail', async () => {
    const { outcome, chunks, stdout } = await agent.run('shell', {
      cmd: "head -c 100000 /dev/zero | tr '\\0' a; printf END",
    });
    expect(stdout).toBe(`${'a'.repeat(100000)}END`);
    expect(chunks.length).toBeGreaterThanOrEqual(98);
    expect(chunks.every((c) => Buffer.byteLength(c.data) <= 1024)).toBe(true);
    expect(chunks.map((c) => c.seq)).toEqual(chunks.map((_, i) => i));
    expect(outcome.outputTail).toBe(`${'a'.repeat(2045)}END`);
  });

  it('output - never splits a multi-byte character across chunks', async () => {
    const ctx = { ...agent.ctx, outputChunkBytes: 1023 };
    const chunks: string[] = [];
    const { runTask } = await import('./task-runner');
    await runTask(
      {
        runId: 'r',
        taskId: 't',
        nodeUid: 'n',
        type: 'shell',
        parameters: { cmd: "for i in $(seq 3000); do printf 'é€'; done" },
      },
      ctx,
      (c) => chunks.push(c.data),
    );
    expect(chunks.join('')).toBe('é€'.repeat(3000));
    expect(chunks.some((c) => c.includes('\uFFFD'))).toBe(false);
    expect(chunks.every((c) => Buffer.byteLength(c) <= 1023)).toBe(true);
  });

  it('noop - prints what would run and does not run it', async () => {
    const marker = path.join(agent.rootDir, 'marker');
    const { outcome, stdout } = await agent.run('shell', { cmd: `touch '${marker}'` }, { noop: true });
    expect(outcome).toMatchObject({ status: 'succeeded', attempts: 0 });
    expect(stdout).toBe(`would run: touch '${marker}' (cwd ${agent.rootDir})\n`);
    expect(existsSync(marker)).toBe(false);
  });

  it('bad parameters - reports every problem and runs nothing', async () => {
    const { outcome } = await agent.run('shell', { timeout: 'soon', retries: 1.5, env: { 'BAD-NAME': 'x' } });
    expect(outcome).toMatchObject({
      status: 'failed',
      exitCode: null,
      attempts: 0,
      errorCode: 'RUNNER_BAD_PARAMETERS',
    });
    expect(outcome.error).toBe(
      'invalid shell parameters: parameters.cmd is missing; ' +
        "parameters.env: 'BAD-NAME' is not a valid variable name; " +
        'parameters.timeout: expected a non-negative number of seconds, got "soon"; ' +
        'parameters.retries: expected a whole number >= 0, got 1.5',
    );
  });

  it('secrets - the task gets them in clear; its output, tail and error show *** instead', async () => {
    const file = path.join(agent.rootDir, 'got-it');
    const { outcome, stdout, stderr } = await agent.run(
      'shell',
      {
        cmd: `printf '%s' "$DB_PASSWORD" > '${file}'; echo "pw=$DB_PASSWORD"; echo "$DB_PASSWORD" | cut -c1-4,5- >&2; exit 4`,
        env: { DB_PASSWORD: 'hunter2-Secret' },
        retries: 0,
      },
      { secrets: ['hunter2-Secret'] },
    );
    expect(await readFile(file, 'utf8')).toBe('hunter2-Secret');
    expect(stdout).toBe('pw=***\n');
    expect(stderr).toBe('***\n');
    expect(outcome.outputTail).toBe('pw=***\n***\n');
    const refused = await agent.run('shell', { cmd: 'x', timeout: 'hunter2-Secret' }, { secrets: ['hunter2-Secret'] });
    expect(refused.outcome.error).toBe(
      'invalid shell parameters: parameters.timeout: expected a non-negative number of seconds, got "***"',
    );
    expect(refused.stderr).not.toContain('hunter2');
  });
});
