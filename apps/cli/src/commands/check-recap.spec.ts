import type { RunEvent, RunEventEntry } from '@granule/contracts';
import { checkCounts, checkedTasks, renderCheckRecap } from './check-recap';

const entries = (events: RunEvent[]): RunEventEntry[] =>
  events.map((event, i) => ({ version: i + 1, at: '2026-01-01T00:00:00.000Z', event }));
const done = { attempt: 1, exitCode: 0, durationMs: 5, outputTail: '', at: 't' };

describe('check recap', () => {
  const tasks = checkedTasks(
    'r1',
    entries([
      {
        type: 'TaskSucceeded',
        data: {
          key: 'conf@1',
          ...done,
          check: { verdict: 'would_change', reason: 'content differs', diff: '-a\n+b\n' },
        },
      },
      { type: 'TaskSucceeded', data: { key: 'motd@1', ...done, check: { verdict: 'no_change', reason: 'as wanted' } } },
      {
        type: 'TaskSkipped',
        data: { key: 'migrate@1', reason: 'check', at: 't', detail: 'shell task not marked check_safe' },
      },
      {
        type: 'TaskFailed',
        data: { key: 'puppet@1', ...done, exitCode: 1, error: 'puppet apply failed: exit code 1' },
      },
    ]),
  );

  it('a line per task instance with its result, the counts first; diffs only when asked', () => {
    expect(checkCounts(tasks)).toEqual({ 'would change': 1, 'no change': 1, unknown: 0, skipped: 1, failed: 1 });
    const text = renderCheckRecap('r1', tasks, false);
    const lines = text.split('\n');
    expect(lines[0]).toBe('CHECK run r1: 1 would change, 1 no change, 1 skipped, 1 failed (nothing was changed)');
    expect(lines.find((l) => l.startsWith('conf@1'))?.split(/\s{2,}/)).toEqual([
      'conf@1',
      'would change',
      'content differs',
    ]);
    expect(lines.find((l) => l.startsWith('migrate@1'))?.split(/\s{2,}/)).toEqual([
      'migrate@1',
      'skipped',
      'shell task not marked check_safe',
    ]);
    expect(text).not.toContain('+b');
    expect(renderCheckRecap('r1', tasks, true)).toContain('--- diff of conf@1\n-a\n+b\n');
    expect(lines.slice(2, 6).map((l) => l.split(/\s+/)[0])).toEqual(['conf@1', 'migrate@1', 'motd@1', 'puppet@1']);
  });
});
