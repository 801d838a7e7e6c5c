import type { InstanceCounts, RunSummary, TaskLogLine } from '@granule/contracts';
import { describeEvent, renderRecap } from './run-format';
import { formatDuration, jsonLogLine, logsCommandFor, renderTaskTable, TaskLogTextPrinter } from './task-log-format';

const zero: InstanceCounts = {
  pending: 0,
  dispatched: 0,
  running: 0,
  succeeded: 0,
  failed: 0,
  skipped: 0,
  dep_failed: 0,
  timed_out: 0,
  not_in_run: 0,
};

const line = (l: Partial<TaskLogLine>): TaskLogLine => ({
  at: '2026-11-25T10:00:00.000Z',
  node: 'n1',
  task: 'install',
  try: 1,
  stream: 'stdout',
  line: 'hello',
  eol: true,
  ...l,
});

describe('failure recap', () => {
  const failed: RunSummary = {
    runId: 'r9',
    phase: 'failed',
    version: 9,
    totals: { ...zero, failed: 1 },
    nodes: { n1: { ...zero, failed: 1, failedNode: true } },
    failures: [
      {
        key: 'install@n1',
        status: 'failed',
        error: 'shell command failed: exit code 2',
        outputTail: 'line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\n',
      },
    ],
    running: [],
    failedTries: 2,
    retriedTasks: 1,
  };

  it('shows the last lines of each failed task and the command that prints the rest', () => {
    const recap = renderRecap(failed);
    expect(recap).toContain(
      '  install@n1: failed (shell command failed: exit code 2)\n' +
        '    | line 3\n    | line 4\n    | line 5\n    | line 6\n    | line 7\n' +
        '    full output: granule logs r9 --node n1 --task install\n',
    );
    expect(recap).not.toContain('line 2');
  });

  it('counts the tries that failed and were run again', () => {
    expect(renderRecap(failed)).toContain('2 failed tries run again (1 task: granule runs tasks r9)\n');
    expect(renderRecap({ ...failed, failedTries: 0 })).not.toContain('run again');
  });
});

describe('runs events', () => {
  it('a failed try says which of how many, why, and that the agent runs it again', () => {
    expect(
      describeEvent({
        version: 7,
        at: '2026-11-25T10:00:03.000Z',
        event: {
          type: 'TaskAttemptFailed',
          data: { key: 'flaky@n2', attempt: 1, try: 1, of: 3, exitCode: 3, reason: 'exit code 3', at: '' },
        },
      }),
    ).toBe(
      '10:00:03  #7    TaskAttemptFailed        flaky@n2: try 1 of 3 failed (exit code 3); the agent runs it again',
    );
  });
});

describe('task log text', () => {
  it('names the task, node and try when the source changes, and marks a cut', () => {
    const p = new TaskLogTextPrinter();
    expect(
      [
        line({}),
        line({ line: 'again' }),
        line({ try: 2, line: 'retry' }),
        line({ try: 2, stream: 'granule', line: '', cut: { limitBytes: 1024, droppedBytes: 10 } }),
      ]
        .map((l) => p.render(l))
        .join(''),
    ).toBe(
      '==> install on n1, try 1 <==\nhello\nagain\n==> install on n1, try 2 <==\nretry\n' +
        '--- output cut at 1024 bytes: 10 more bytes were not kept ---\n',
    );
  });

  it('puts the time in front with timestamps; -o json gives one object per line', () => {
    expect(new TaskLogTextPrinter(true).render(line({})).split('\n')[1]).toBe('2026-11-25T10:00:00.000Z hello');
    const json = jsonLogLine(line({ eol: false }));
    expect(json.endsWith('\n')).toBe(true);
    expect(JSON.parse(json)).toMatchObject({ node: 'n1', task: 'install', try: 1, line: 'hello', eol: false });
  });

  it('the logs command of a key names its node and task', () => {
    expect(logsCommandFor('r1', 'upload-keys@node-7')).toBe('granule logs r1 --node node-7 --task upload-keys');
  });
});

describe('runs tasks table', () => {
  it('lists status, tries, exit code, start, duration and node; errors only when there are some', () => {
    const table = renderTaskTable({
      runId: 'r1',
      phase: 'failed',
      tasks: [
        {
          runId: 'r1',
          key: 'a@n1',
          task: 'a',
          node: 'n1',
          status: 'succeeded',
          tries: 2,
          exitCode: 0,
          startedAt: '2026-11-25T10:00:00.123Z',
          durationMs: 65_000,
        },
        { runId: 'r1', key: 'b@n1', task: 'b', node: 'n1', status: 'dep_failed', tries: 0, exitCode: null },
      ],
    }).split('\n');
    expect(recapHead(table)).toEqual([
      'run r1: failed, 2 task instances',
      'TASK  NODE  STATUS      TRIES  EXIT  STARTED               DURATION',
      'a     n1    succeeded   2      0     2026-11-25 10:00:00Z  1m05s',
      'b     n1    dep_failed  0',
    ]);
  });

  it('formats durations for people', () => {
    expect([
      formatDuration(1234),
      formatDuration(61_000),
      formatDuration(7_500_000),
      formatDuration(undefined),
    ]).toEqual(['1.2s', '1m01s', '2h05m', '']);
  });
});

function recapHead(lines: string[]): string[] {
  return lines.filter((l) => l !== '');
}
