import { readFileSync } from 'node:fs';
import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { journalKey, TaskJournal, TASK_JOURNAL_FILE } from './task-journal';
import type { TaskOutcome } from './task-runner.types';

let stateDir: string;
beforeEach(async () => {
  stateDir = path.join(await mkdtemp(path.join(tmpdir(), 'granule-journal-')), 'state');
});
afterEach(() => rm(path.dirname(stateDir), { recursive: true, force: true }));

const ok: TaskOutcome = { status: 'succeeded', exitCode: 0, durationMs: 12, outputTail: 'done\n', attempts: 1 };
const bad: TaskOutcome = {
  status: 'failed',
  exitCode: 3,
  durationMs: 40,
  outputTail: '',
  attempts: 3,
  error: 'shell command failed: exit code 3',
};
const fixedNow = (): Date => new Date('2025-01-02T03:04:05.000Z');

describe('journalKey', () => {
  it('is runId/taskId/nodeUid/attempt, attempt 1 by default, parts URI-encoded', () => {
    expect(journalKey({ runId: 'run-7', taskId: 'netconfig', nodeUid: '3' })).toBe('run-7/netconfig/3/1');
    expect(journalKey({ runId: 'run-7', taskId: 'netconfig', nodeUid: '3', attempt: 2 })).toBe('run-7/netconfig/3/2');
    expect(journalKey({ runId: 'r', taskId: 'a/b', nodeUid: 'n' })).toBe('r/a%2Fb/n/1');
  });
});

describe('TaskJournal', () => {
  it('survives a restart: outcomes recorded by one instance are read by the next', async () => {
    const first = await TaskJournal.open(stateDir, { now: fixedNow });
    await first.append('r/a/1/1', ok);
    await first.append('r/b/1/1', bad);
    await first.close();

    const second = await TaskJournal.open(stateDir);
    expect(second.size).toBe(2);
    expect(second.get('r/a/1/1')).toEqual(ok);
    expect(second.get('r/b/1/1')).toEqual(bad);
    expect(second.entry('r/a/1/1')?.recordedAt).toBe('2025-01-02T03:04:05.000Z');
    expect(second.get('r/c/1/1')).toBeUndefined();
    await second.close();
  });

  it('writes one JSON line per record, in call order, even when records are not awaited one by one', async () => {
    const journal = await TaskJournal.open(stateDir, { now: fixedNow });
    await Promise.all([journal.append('k1', ok), journal.append('k2', bad), journal.append('k3', ok)]);
    await journal.close();
    const lines = (await readFile(path.join(stateDir, TASK_JOURNAL_FILE), 'utf8')).trimEnd().split('\n');
    expect(lines.map((l) => JSON.parse(l).key)).toEqual(['k1', 'k2', 'k3']);
    expect(JSON.parse(lines[0])).toEqual({ key: 'k1', outcome: ok, recordedAt: '2025-01-02T03:04:05.000Z' });
  });

  it('the last record of a key wins after a restart', async () => {
    const first = await TaskJournal.open(stateDir);
    await first.append('k', bad);
    await first.append('k', ok);
    await first.close();
    const second = await TaskJournal.open(stateDir);
    expect(second.get('k')).toEqual(ok);
    await second.close();
  });

  it('skips a line torn by a crash and keeps appending on a fresh line', async () => {
    const first = await TaskJournal.open(stateDir);
    await first.append('k1', ok);
    await first.close();
    await appendFile(path.join(stateDir, TASK_JOURNAL_FILE), '{"key":"k2","outc');

    const second = await TaskJournal.open(stateDir);
    expect(second.skippedLines).toBe(1);
    expect(second.has('k2')).toBe(false);
    await second.append('k3', bad);
    await second.close();

    const third = await TaskJournal.open(stateDir);
    expect([third.get('k1'), third.get('k3'), third.skippedLines]).toEqual([ok, bad, 1]);
    await third.close();
  });

  it('append writes the line before it returns and hands back the flush, so a report can go out meanwhile', async () => {
    const journal = await TaskJournal.open(stateDir, { now: fixedNow });
    const flushed = journal.append('k', ok);
    // Written (and answered) already, before the flush settles: a crash of this process now keeps it.
    expect(readFileSync(path.join(stateDir, TASK_JOURNAL_FILE), 'utf8')).toBe(
      `${JSON.stringify({ key: 'k', outcome: ok, recordedAt: '2025-01-02T03:04:05.000Z' })}\n`,
    );
    expect(journal.get('k')).toEqual(ok);
    await expect(flushed).resolves.toBeUndefined();
    await journal.close();
  });

  it('append throws at once on a closed journal (nothing to report), with the file named', async () => {
    const journal = await TaskJournal.open(stateDir);
    await journal.close();
    expect(() => journal.append('k', ok)).toThrow(
      expect.objectContaining({ code: 'RUNNER_JOURNAL_IO', message: expect.stringContaining(TASK_JOURNAL_FILE) }),
    );
    expect(journal.get('k')).toBeUndefined();
  });
});
