import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { waitUntil } from '@granule/messaging';
import { stopLeftoverGroup } from './leftover-group';
import { currentBootId, processStartTime } from './process-spawner';
import { runTask } from './task-runner';
import type { TaskProcessGroup } from './task-runner.types';
import { createTempAgent, processAlive, type TempAgent } from './testing/temp-agent.fixture';

jest.setTimeout(30_000);

let agent: TempAgent;
const started: number[] = [];
beforeEach(async () => {
  agent = await createTempAgent();
});
afterEach(async () => {
  for (const pgid of started.splice(0)) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await agent.cleanup();
});

/** Starts `script` as its own process group, like a task attempt, with the given environment. */
function startGroup(script: string, env: Record<string, string> = {}): number {
  const child = spawn('/bin/bash', ['-c', script], {
    detached: true,
    stdio: 'ignore',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
  });
  child.unref();
  const pid = child.pid as number;
  started.push(pid);
  return pid;
}

const ticksOf = (pid: number): number =>
  Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[19]);

describe('runTask options.onSpawn', () => {
  it('reports each attempt’s process group with the leader’s start time, boot id and the task ids', async () => {
    const log = path.join(agent.rootDir, 'attempts.log');
    const groups: TaskProcessGroup[] = [];
    const exec = {
      runId: 'run-7',
      taskId: 'migrate',
      nodeUid: 'n',
      type: 'shell' as const,
      parameters: { cmd: `echo "$$ $(cut -d' ' -f22 /proc/$$/stat)" >> '${log}'; exit 1`, retries: 1, interval: 0 },
    };
    const outcome = await runTask(exec, agent.ctx, undefined, undefined, { onSpawn: (g) => groups.push(g) });
    expect(outcome).toMatchObject({ status: 'failed', attempts: 2 });
    const seen = (await readFile(log, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => line.split(' ').map(Number));
    expect(seen).toHaveLength(2);
    expect(seen[0][0]).not.toBe(seen[1][0]);
    expect(groups).toEqual(
      seen.map(([pid, ticks]) => ({
        pgid: pid,
        startTime: ticks,
        bootId: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
        runId: 'run-7',
        taskId: 'migrate',
      })),
    );
  });

  it('is not called for file tasks or a command that cannot start, and a throwing listener breaks nothing', async () => {
    const calls: TaskProcessGroup[] = [];
    const upload = await runTask(
      {
        runId: 'r',
        taskId: 'u',
        nodeUid: 'n',
        type: 'upload_file',
        parameters: { path: path.join(agent.allowed, 'x'), data: 'x' },
      },
      agent.ctx,
      undefined,
      undefined,
      { onSpawn: (g) => calls.push(g) },
    );
    const missing = await runTask(
      { runId: 'r', taskId: 'p', nodeUid: 'n', type: 'puppet', parameters: { puppet_manifest: 'site.pp' } },
      { ...agent.ctx, puppetBin: '/nonexistent/puppet' },
      undefined,
      undefined,
      { onSpawn: (g) => calls.push(g) },
    );
    const throwing = await runTask(
      { runId: 'r', taskId: 's', nodeUid: 'n', type: 'shell', parameters: { cmd: 'echo ok' } },
      agent.ctx,
      undefined,
      undefined,
      {
        onSpawn: () => {
          throw new Error('listener bug');
        },
      },
    );
    expect([upload.status, missing.errorCode, throwing.status, throwing.outputTail]).toEqual([
      'succeeded',
      'RUNNER_SPAWN_FAILED',
      'succeeded',
      'ok\n',
    ]);
    expect(calls).toEqual([]);
  });
});

describe('stopLeftoverGroup', () => {
  const ids = { runId: 'run-1', taskId: 'deploy' };

  it('stops a group whose leader has the recorded start time: leader and children', async () => {
    const pidFile = path.join(agent.base, 'child.pid');
    const pgid = startGroup(`sleep 30 & echo $! > '${pidFile}'; wait`);
    await waitUntil(
      () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n'),
      'the child to start',
      5000,
    );
    const child = Number(readFileSync(pidFile, 'utf8'));
    const result = await stopLeftoverGroup({
      pgid,
      startTime: processStartTime(pgid),
      bootId: currentBootId(),
      ...ids,
    });
    expect(result).toEqual({ state: 'stopped', pids: [pgid, child].sort((a, b) => a - b) });
    expect([processAlive(pgid), processAlive(child)]).toEqual([false, false]);
  });

  it('never signals a group whose leader started at another time (a reused id), even with the same ids in its environment', async () => {
    const pgid = startGroup('sleep 30', { GRANULE_RUN_ID: ids.runId, GRANULE_TASK_ID: ids.taskId });
    await waitUntil(() => processStartTime(pgid) !== undefined, 'the group to start', 5000);
    const result = await stopLeftoverGroup({ pgid, startTime: ticksOf(pgid) + 1, ...ids });
    expect(result).toEqual({ state: 'unconfirmed', pids: [pgid] });
    expect(processAlive(pgid)).toBe(true);
  });

  it('a leaderless group is stopped only when a member’s environment names the task', async () => {
    const theirs = path.join(agent.base, 'theirs.pid');
    const ours = path.join(agent.base, 'ours.pid');
    const other = startGroup(`sleep 30 & echo $! > '${theirs}'`, {
      GRANULE_RUN_ID: ids.runId,
      GRANULE_TASK_ID: 'another-task',
    });
    const task = startGroup(`sleep 30 & echo $! > '${ours}'`, {
      GRANULE_RUN_ID: ids.runId,
      GRANULE_TASK_ID: ids.taskId,
    });
    await waitUntil(
      () =>
        [theirs, ours].every((f) => existsSync(f) && readFileSync(f, 'utf8').endsWith('\n')) &&
        !processAlive(other) &&
        !processAlive(task),
      'the leaders to exit',
      5000,
    );
    const [theirSleep, ourSleep] = [theirs, ours].map((f) => Number(readFileSync(f, 'utf8')));

    expect(await stopLeftoverGroup({ pgid: other, startTime: 1, ...ids })).toEqual({
      state: 'unconfirmed',
      pids: [theirSleep],
    });
    expect(await stopLeftoverGroup({ pgid: task, startTime: 1, ...ids })).toEqual({
      state: 'stopped',
      pids: [ourSleep],
    });
    expect([processAlive(theirSleep), processAlive(ourSleep)]).toEqual([true, false]);
  });

  it('a child that ignores SIGTERM is killed after the grace', async () => {
    const pidFile = path.join(agent.base, 'stubborn.pid');
    const pgid = startGroup(`trap '' TERM; echo $$ > '${pidFile}'; while true; do sleep 0.05; done`);
    await waitUntil(() => existsSync(pidFile), 'the trap to be set', 5000);
    const t0 = Date.now();
    expect(
      await stopLeftoverGroup({ pgid, startTime: processStartTime(pgid), ...ids }, { killGraceMs: 300 }),
    ).toMatchObject({ state: 'stopped' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
    expect(processAlive(pgid)).toBe(false);
  });

  it('a group that no longer runs, or one recorded before the last boot, is gone and nothing is signalled', async () => {
    const pgid = startGroup('exit 0');
    await waitUntil(() => !processAlive(pgid), 'the group to end', 5000);
    expect(await stopLeftoverGroup({ pgid, startTime: 1, ...ids })).toEqual({ state: 'gone', pids: [] });

    const live = startGroup('sleep 30', { GRANULE_RUN_ID: ids.runId, GRANULE_TASK_ID: ids.taskId });
    await waitUntil(() => processStartTime(live) !== undefined, 'the group to start', 5000);
    expect(await stopLeftoverGroup({ pgid: live, startTime: ticksOf(live), bootId: 'another-boot', ...ids })).toEqual({
      state: 'gone',
      pids: [],
    });
    expect(processAlive(live)).toBe(true);
  });
});
