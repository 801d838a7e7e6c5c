import path from 'node:path';
import type { RunSummary, RunTasksReply, TaskLogLine } from '@granule/contracts';
import { E2eStack, FIXTURES, dataOf } from './stack';

// Task logs and the per-task view on two agents (ADR 0030): output stored per try with a cut at
// the limit, streams kept in order, a line never ended, tries as events, `logs --follow`.
const LOGS = ['--tasks', path.join(FIXTURES, 'logs/tasks.yaml'), '--nodes', path.join(FIXTURES, 'logs/nodes.yaml')];
const MIB = 1024 * 1024;

const jsonLines = (stdout: string): TaskLogLine[] =>
  stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as TaskLogLine);

describe('task logs and the per-task view (whole stack)', () => {
  let stack: E2eStack;

  beforeAll(async () => {
    stack = await E2eStack.start({ name: 'task_logs', agents: ['1', '2'] });
    const r = await stack.granule(['deploy', ...LOGS, '--skip', 'fails,ticks', '--run-id', 'logs-main', '--watch']);
    stack.assertExitedOk(r, 'granule deploy logs-main');
  }, 180_000);

  afterAll(async () => {
    await stack?.stop();
  }, 60_000);

  it('a task that writes 5 MiB - the first MiB is kept, in whole lines up to the cut, and the cut says how much was left out', async () => {
    const r = await stack.granule(['logs', 'logs-main', '--task', 'big', '-o', 'json']);
    stack.assertExitedOk(r, 'granule logs --task big');
    const lines = jsonLines(r.stdout);
    const cut = lines.at(-1);
    expect(cut).toMatchObject({ task: 'big', node: '1', try: 1, stream: 'granule', cut: { limitBytes: MIB } });
    const kept = lines.slice(0, -1);
    const keptBytes = kept.reduce((n, l) => n + Buffer.byteLength(l.line) + (l.eol ? 1 : 0), 0);
    expect(keptBytes).toBe(MIB);
    expect(cut?.cut?.droppedBytes).toBe(5 * MIB + 'END-OF-BIG\n'.length - MIB);
    expect(kept.slice(0, -1).every((l) => l.line === '0'.repeat(99) + '7' && l.eol)).toBe(true);
    expect(r.stdout).not.toContain('END-OF-BIG');
    const text = await stack.granule(['logs', 'logs-main', '--node', '1', '--task', 'big']);
    expect(text.stdout.split('\n')[0]).toBe('==> big on 1, try 1 <==');
    expect(text.stdout).toContain(
      `--- output cut at ${MIB} bytes: ${5 * MIB + 11 - MIB} more bytes were not kept ---\n`,
    );
  }, 60_000);

  it('filters that match no output - nothing on stdout, and a line on stderr saying so and where to look', async () => {
    const r = await stack.granule(['logs', 'logs-main', '--node', '9', '--task', 'nosuch']);
    expect([r.code, r.stdout, r.stderr]).toEqual([
      0,
      '',
      'no task output of run logs-main matches --node 9 --task nosuch (granule runs tasks logs-main lists its tasks and nodes)\n',
    ]);
    // Output found: stderr stays quiet.
    const found = await stack.granule(['logs', 'logs-main', '--task', 'no-newline']);
    expect([found.code, found.stderr]).toEqual([0, '']);
  }, 60_000);

  it('a task writing to stdout and stderr in turn - the lines come back in the order written, each with its stream and time', async () => {
    const r = await stack.granule(['logs', 'logs-main', '--task', 'interleaved', '-o', 'json']);
    stack.assertExitedOk(r, 'granule logs --task interleaved');
    const lines = jsonLines(r.stdout);
    const expected = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].flatMap((i) => [
      ['stdout', `out ${i}`],
      ['stderr', `err ${i}`],
    ]);
    expect(lines.map((l) => [l.stream, l.line])).toEqual(expected);
    const times = lines.map((l) => Date.parse(l.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect((times.at(-1) ?? 0) - times[0]).toBeGreaterThan(500);
    const errs = await stack.granule(['logs', 'logs-main', '--task', 'interleaved', '--stderr-only', '-o', 'json']);
    expect(jsonLines(errs.stdout).map((l) => l.line)).toEqual(
      expected.filter(([s]) => s === 'stderr').map(([, l]) => l),
    );
  }, 30_000);

  it('a task that never ends its last line - the line is printed whole, marked unended in json', async () => {
    const json = await stack.granule(['logs', 'logs-main', '--task', 'no-newline', '-o', 'json']);
    expect(jsonLines(json.stdout).map((l) => [l.line, l.eol])).toEqual([
      ['first line', true],
      ['no newline at the end', false],
    ]);
    const text = await stack.granule(['logs', 'logs-main', '--task', 'no-newline']);
    expect(text.stdout).toBe('==> no-newline on 1, try 1 <==\nfirst line\nno newline at the end\n');
  }, 30_000);

  it('every try is an event with its exit code; the logs of each try are apart; runs tasks and runs show count them', async () => {
    const events = await stack.events('logs-main');
    const tries = events.filter((e) => e.type === 'TaskAttemptFailed').map((e) => dataOf(e, 'TaskAttemptFailed'));
    expect(tries.map((t) => [t.key, t.try, t.of, t.exitCode, t.reason])).toEqual([
      ['flaky@2', 1, 3, 3, 'shell command failed: exit code 3'],
      ['flaky@2', 2, 3, 4, 'shell command failed: exit code 4'],
    ]);
    const done = events.find((e) => e.type === 'TaskSucceeded' && e.data.key === 'flaky@2');
    expect(done?.data.tries).toBe(3);

    const first = await stack.granule(['logs', 'logs-main', '--task', 'flaky', '--attempt', '1', '-o', 'json']);
    // (Order across the two streams is what the interleaved test checks: here they are a few ms apart.)
    expect(
      jsonLines(first.stdout)
        .map((l) => [l.try, l.stream, l.line])
        .sort(),
    ).toEqual([
      [1, 'stderr', '[granule] attempt 1 of 3 failed (shell command failed: exit code 3); retrying in 0s'],
      [1, 'stdout', 'flaky try 1'],
    ]);
    const all = await stack.granule(['logs', 'logs-main', '--task', 'flaky', '-o', 'json']);
    expect(
      jsonLines(all.stdout)
        .filter((l) => l.stream === 'stdout')
        .map((l) => [l.try, l.line]),
    ).toEqual([
      [1, 'flaky try 1'],
      [2, 'flaky try 2'],
      [3, 'flaky try 3'],
    ]);

    const tasks = await stack.granule(['runs', 'tasks', 'logs-main', '-o', 'json']);
    stack.assertExitedOk(tasks, 'granule runs tasks');
    const reply = JSON.parse(tasks.stdout) as RunTasksReply;
    expect(reply.phase).toBe('succeeded');
    expect(reply.tasks.map((t) => [t.task, t.node, t.status, t.tries, t.exitCode]).sort()).toEqual([
      ['big', '1', 'succeeded', 1, 0],
      ['flaky', '2', 'succeeded', 3, 0],
      ['interleaved', '1', 'succeeded', 1, 0],
      ['no-newline', '1', 'succeeded', 1, 0],
    ]);
    const flaky = reply.tasks.find((t) => t.task === 'flaky');
    expect(flaky?.startedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(flaky?.durationMs).toBeGreaterThan(0);

    const table = await stack.granule(['runs', 'tasks', 'logs-main', '--node', '2', '--status', 'succeeded']);
    const rows = table.stdout.split('\n');
    expect(rows[1].split(/\s+/)).toEqual(['TASK', 'NODE', 'STATUS', 'TRIES', 'EXIT', 'STARTED', 'DURATION']);
    expect(rows[2]).toMatch(/^flaky\s+2\s+succeeded\s+3\s+0\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+\d+\.\ds$/);
    expect(rows.filter((l) => l !== '')).toHaveLength(3);

    const bad = await stack.granule(['runs', 'tasks', 'logs-main', '--status', 'broken']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('status: expected one of pending, dispatched, running');

    const show = await stack.granule(['runs', 'show', 'logs-main', '-o', 'json']);
    expect(JSON.parse(show.stdout) as RunSummary).toMatchObject({ failedTries: 2, retriedTasks: 1 });
  }, 60_000);

  it('logs --follow prints output as it comes and ends when the run ends', async () => {
    const started = await stack.granule(['deploy', ...LOGS, '--only', 'ticks', '--run-id', 'logs-follow']);
    stack.assertExitedOk(started, 'granule deploy logs-follow');
    // A viewer may read logs too. When the first tick is printed, the run is still going.
    let endedAtFirstTick: boolean | undefined;
    const follow = await stack.granule(['logs', 'logs-follow', '--follow'], {
      as: 'e2e-viewer',
      timeoutMs: 60_000,
      onStdout: (text) => {
        if (endedAtFirstTick !== undefined || !text.includes('tick 1\n')) return;
        endedAtFirstTick = false;
        void stack.events('logs-follow').then((events) => {
          endedAtFirstTick = events.some((e) => e.type === 'DeploymentSucceeded');
        });
      },
    });
    stack.assertExitedOk(follow, 'granule logs --follow');
    expect(endedAtFirstTick).toBe(false);
    const events = await stack.events('logs-follow');
    expect(events.at(-1)?.type).toBe('DeploymentSucceeded');
    expect(follow.stdout).toBe(
      `==> ticks on 2, try 1 <==\n${[1, 2, 3, 4, 5, 6, 7, 8].map((i) => `tick ${i}\n`).join('')}`,
    );
  }, 90_000);

  it('a failed run - the recap shows the last lines of the failed task and the command that prints the rest', async () => {
    const r = await stack.granule(['deploy', ...LOGS, '--only', 'fails', '--run-id', 'logs-fail', '--watch']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      '  fails@2: failed (shell command failed: exit code 2)\n' +
        [4, 5, 6, 7, 8].map((i) => `    | fail line ${i}\n`).join('') +
        '    full output: granule logs logs-fail --node 2 --task fails\n',
    );
    const rest = await stack.granule(['logs', 'logs-fail', '--node', '2', '--task', 'fails']);
    expect(rest.stdout).toContain([1, 2, 3, 4, 5, 6, 7, 8].map((i) => `fail line ${i}\n`).join(''));
  }, 60_000);
});
