import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { waitUntil } from '@granule/messaging';
import type { TaskType } from '@granule/task-model';
import { isRebootPending, resolveRootDir, runTask, TaskRunner } from './task-runner';
import { createTempAgent, processAlive, type TempAgent } from './testing/temp-agent.fixture';

jest.setTimeout(30_000);

let agent: TempAgent;
beforeEach(async () => {
  agent = await createTempAgent();
});
afterEach(() => agent.cleanup());

describe('graph-only task types', () => {
  it.each<TaskType>(['stage', 'group', 'skipped'])('%s succeeds at once without running anything', async (type) => {
    const { outcome, chunks } = await agent.run(type, { cmd: 'exit 1' });
    expect(outcome).toMatchObject({ status: 'succeeded', exitCode: 0, attempts: 0, outputTail: '' });
    expect(chunks).toEqual([]);
  });

  it('an unknown type fails with RUNNER_UNKNOWN_TASK_TYPE', async () => {
    const { outcome } = await agent.run('teleport' as TaskType, {});
    expect(outcome).toMatchObject({
      status: 'failed',
      attempts: 0,
      errorCode: 'RUNNER_UNKNOWN_TASK_TYPE',
      error: "no runner for task type 'teleport'",
    });
  });
});

describe('reboot task', () => {
  it('runs the configured reboot command and asks the agent to wait for the host', async () => {
    const marker = path.join(agent.base, 'rebooted');
    const runner = new TaskRunner({ ...agent.ctx, rebootCommand: `touch '${marker}'` });
    const outcome = await runner.run({
      runId: 'r',
      taskId: 'reboot',
      nodeUid: 'n',
      type: 'reboot',
      parameters: { timeout: 600 },
    });
    expect(existsSync(marker)).toBe(true);
    expect(outcome).toMatchObject({ status: 'succeeded', exitCode: 0, rebootRequested: true, rebootTimeoutSec: 600 });
    expect(isRebootPending(outcome)).toBe(true);
  });

  it('a failing reboot command fails the task and leaves nothing pending', async () => {
    const outcome = await runTask(
      { runId: 'r', taskId: 'reboot', nodeUid: 'n', type: 'reboot', parameters: {} },
      { ...agent.ctx, rebootCommand: 'exit 5' },
    );
    expect(outcome).toMatchObject({
      status: 'failed',
      exitCode: 5,
      rebootRequested: true,
      rebootTimeoutSec: 300,
      error: 'reboot command failed: exit code 5',
    });
    expect(isRebootPending(outcome)).toBe(false);
  });

  it('noop - names the command and does not run it', async () => {
    const marker = path.join(agent.base, 'rebooted');
    const outcome = await runTask(
      { runId: 'r', taskId: 'reboot', nodeUid: 'n', type: 'reboot', parameters: {}, noop: true },
      { ...agent.ctx, rebootCommand: `touch '${marker}'` },
    );
    expect(outcome.outputTail).toBe(`would reboot with: touch '${marker}'\n`);
    expect(existsSync(marker)).toBe(false);
    expect(isRebootPending(outcome)).toBe(false);
  });
});

describe('cancellation', () => {
  it('aborting kills the whole process group and reports failed / cancelled', async () => {
    const pidFile = path.join(agent.rootDir, 'bg.pid');
    const controller = new AbortController();
    const running = agent.run(
      'shell',
      { cmd: `sleep 30 & echo $! > '${pidFile}'; echo started; sleep 30` },
      {},
      controller.signal,
    );
    await waitUntil(() => existsSync(pidFile), 'the task to write its pid file', 4000);
    controller.abort();
    const { outcome, stdout } = await running;
    expect(outcome).toMatchObject({
      status: 'failed',
      exitCode: null,
      signal: 'SIGTERM',
      attempts: 1,
      error: 'cancelled',
      errorCode: 'RUNNER_CANCELLED',
    });
    expect(outcome.durationMs).toBeLessThan(3000);
    expect(stdout).toBe('started\n');
    expect(processAlive(Number((await readFile(pidFile, 'utf8')).trim()))).toBe(false);
  });

  it('aborting while waiting to retry stops without another attempt', async () => {
    const log = path.join(agent.rootDir, 'attempts.log');
    const controller = new AbortController();
    const running = agent.run(
      'shell',
      { cmd: `echo run >> '${log}'; exit 1`, retries: 3, interval: 30 },
      {},
      controller.signal,
    );
    await waitUntil(() => existsSync(log), 'the first attempt', 4000);
    controller.abort();
    const { outcome } = await running;
    expect(outcome).toMatchObject({ status: 'failed', attempts: 1, error: 'cancelled' });
    expect(await readFile(log, 'utf8')).toBe('run\n');
  });

  it('an already aborted signal runs nothing', async () => {
    const marker = path.join(agent.rootDir, 'marker');
    const { outcome } = await agent.run('shell', { cmd: `touch '${marker}'` }, {}, AbortSignal.abort());
    expect(outcome).toMatchObject({ status: 'failed', attempts: 0, error: 'cancelled' });
    expect(existsSync(marker)).toBe(false);
  });
});

describe('process lifetime and output', () => {
  it('a background child that keeps the output open does not hold the task past the drain period', async () => {
    const pidFile = path.join(agent.rootDir, 'bg.pid');
    const { outcome } = await agent.run('shell', { cmd: `sleep 20 & echo $! > '${pidFile}'; echo done` });
    const pid = Number((await readFile(pidFile, 'utf8')).trim());
    try {
      expect(outcome).toMatchObject({ status: 'succeeded', exitCode: 0 });
      expect(outcome.durationMs).toBeLessThan(3000);
      expect(processAlive(pid)).toBe(true); // left running: only timeouts and aborts kill the group
    } finally {
      process.kill(pid, 'SIGKILL');
    }
  });

  it('a listener that throws does not break the task', async () => {
    const outcome = await runTask(
      { runId: 'r', taskId: 't', nodeUid: 'n', type: 'shell', parameters: { cmd: 'echo one; echo two' } },
      agent.ctx,
      () => {
        throw new Error('listener bug');
      },
    );
    expect(outcome).toMatchObject({ status: 'succeeded', outputTail: 'one\ntwo\n' });
  });
});

describe('resolveRootDir', () => {
  it('uses GRANULE_ROOT when set, else the working directory', () => {
    expect(resolveRootDir({ GRANULE_ROOT: '/srv/agent-1' }, '/home/x')).toBe('/srv/agent-1');
    expect(resolveRootDir({ GRANULE_ROOT: '' }, '/home/x')).toBe('/home/x');
    expect(resolveRootDir({}, '/home/x')).toBe('/home/x');
  });
});
