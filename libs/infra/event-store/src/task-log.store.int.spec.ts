import type { TaskLogMessage } from '@granule/run-events';
import { TaskLogStore } from './task-log.store';
import { createTestDatabase, type TestDatabase } from './testing/test-database';

jest.setTimeout(30_000);

let db: TestDatabase;
let store: TaskLogStore;
beforeAll(async () => {
  db = await createTestDatabase('task_logs');
  store = new TaskLogStore(db.dataSource);
});
afterAll(() => db?.drop());

const message = (m: Partial<TaskLogMessage> & Pick<TaskLogMessage, 'seq' | 'chunks'>): TaskLogMessage => ({
  runId: 'r1',
  key: 'build@n1',
  node: 'n1',
  attempt: 1,
  try: 1,
  ...m,
});

describe('TaskLogStore', () => {
  it('keeps pieces in the order stored, with their stream and time; a message delivered again is stored once', async () => {
    const first = message({
      seq: 0,
      chunks: [
        { stream: 'stdout', at: Date.parse('2026-01-01T00:00:01Z'), data: 'out 1\n' },
        { stream: 'stderr', at: Date.parse('2026-01-01T00:00:02Z'), data: 'err 1\n' },
      ],
    });
    expect(await store.append(first, 1024)).toMatchObject({ stored: true, keptBytes: 12 });
    expect(await store.append(first, 1024)).toMatchObject({ stored: false });
    await store.append(
      message({
        seq: 1,
        chunks: [{ stream: 'stdout', at: Date.parse('2026-01-01T00:00:03Z'), data: 'nul\u0000' }],
        end: true,
      }),
      1024,
    );
    const { records, more } = await store.read({ runIds: ['r1'], limit: 100 });
    expect(more).toBe(false);
    expect(records.map((r) => [r.stream, r.data, r.at])).toEqual([
      ['stdout', 'out 1\n', '2026-01-01T00:00:01.000Z'],
      ['stderr', 'err 1\n', '2026-01-01T00:00:02.000Z'],
      ['stdout', 'nul\uFFFD', '2026-01-01T00:00:03.000Z'],
    ]);
    expect((await store.read({ runIds: ['r1'], stderrOnly: true, limit: 100 })).records.map((r) => r.data)).toEqual([
      'err 1\n',
    ]);
    const page = await store.read({ runIds: ['r1'], limit: 1 });
    expect(page.more).toBe(true);
    expect((await store.read({ runIds: ['r1'], afterId: page.records[0].id, limit: 1 })).records[0].data).toBe(
      'err 1\n',
    );
  });

  it('keeps at most the limit per try, whatever the agent sends, and the last message adds the cut marker', async () => {
    const run = { runId: 'r2', key: 'big@n1' };
    await store.append(message({ ...run, seq: 0, chunks: [{ stream: 'stdout', at: 1, data: 'a'.repeat(600) }] }), 1000);
    await store.append(message({ ...run, seq: 1, chunks: [{ stream: 'stdout', at: 2, data: 'b'.repeat(600) }] }), 1000);
    await store.append(
      message({ ...run, seq: 2, chunks: [], end: true, cut: { limitBytes: 1000, droppedBytes: 5000 } }),
      1000,
    );
    // Another try of the same task has a budget of its own.
    await store.append(
      message({ ...run, try: 2, seq: 0, chunks: [{ stream: 'stdout', at: 3, data: 'c'.repeat(10) }], end: true }),
      1000,
    );
    const { records } = await store.read({ runIds: ['r2'], limit: 100 });
    expect(
      records
        .filter((r) => r.try === 1 && !r.cut)
        .map((r) => r.data)
        .join(''),
    ).toBe('a'.repeat(600) + 'b'.repeat(400));
    expect(records.find((r) => r.cut)).toMatchObject({ try: 1, cut: { limitBytes: 1000, droppedBytes: 200 + 5000 } });
    expect((await store.read({ runIds: ['r2'], try: 2, limit: 100 })).records.map((r) => r.data)).toEqual([
      'c'.repeat(10),
    ]);
  });

  it('pages in the order stored when ids gain a digit (ids are numbers, not text)', async () => {
    for (let seq = 0; seq < 100; seq++)
      await store.append(
        message({ runId: 'r4', seq, chunks: [{ stream: 'stdout', at: seq, data: `${seq}\n` }] }),
        1000,
      );
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await store.read({ runIds: ['r4'], limit: 30, ...(after ? { afterId: after } : {}) });
      seen.push(...page.records.map((r) => r.data.trim()));
      after = page.records.at(-1)?.id;
      if (!page.more) break;
    }
    expect(seen).toEqual(Array.from({ length: 100 }, (_, i) => String(i)));
  });

  it('filters by node and by task across the runs asked for', async () => {
    await store.append(
      message({ runId: 'r3', key: 'x@n2', node: 'n2', seq: 0, chunks: [{ stream: 'stdout', at: 1, data: 'on n2' }] }),
      1000,
    );
    await store.append(
      message({ runId: 'r3', key: 'xy@n1', node: 'n1', seq: 0, chunks: [{ stream: 'stdout', at: 1, data: 'xy' }] }),
      1000,
    );
    expect((await store.read({ runIds: ['r3'], node: 'n2', limit: 10 })).records.map((r) => r.data)).toEqual(['on n2']);
    expect((await store.read({ runIds: ['r3', 'r1'], task: 'xy', limit: 10 })).records.map((r) => r.data)).toEqual([
      'xy',
    ]);
    expect((await store.read({ runIds: ['r1', 'r3'], task: 'build', limit: 10 })).records).toHaveLength(3);
  });
});

describe('TaskLogStore read by a follower while several orchestrators store', () => {
  it('a follower paging with afterId misses no record: ids are visible in the order they were given', async () => {
    const runId = 'r-concurrent';
    const writers = 6;
    const perWriter = 40;
    let writing = true;
    const seen: string[] = [];
    // A follower as `granule logs --follow` and the HTTP stream read: a page after the last id seen.
    const follow = (async () => {
      let after: string | undefined;
      for (;;) {
        const done = !writing;
        const { records } = await store.read({ runIds: [runId], limit: 1000, ...(after ? { afterId: after } : {}) });
        for (const r of records) seen.push(r.id);
        after = records.at(-1)?.id ?? after;
        if (done && records.length === 0) return;
      }
    })();
    // Each writer stands for an orchestrator storing its messages one at a time, all at once.
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let seq = 0; seq < perWriter; seq++)
          await store.append(
            message({
              runId,
              key: `step${w}@n${w}`,
              node: `n${w}`,
              seq,
              chunks: [{ stream: 'stdout', at: Date.now(), data: `${w}:${seq}\n` }],
            }),
            1 << 20,
          );
      }),
    );
    writing = false;
    await follow;
    const stored = (await store.read({ runIds: [runId], limit: 10_000 })).records.map((r) => r.id);
    expect(stored).toHaveLength(writers * perWriter);
    expect(seen).toEqual(stored);
  });
});
