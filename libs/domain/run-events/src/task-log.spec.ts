import { fitTaskLog, TaskLogLineSplitter, utf8Length, utf8Prefix, type TaskLogRecord } from './task-log';

const rec = (
  id: number,
  stream: 'stdout' | 'stderr',
  data: string,
  more: Partial<TaskLogRecord> = {},
): TaskLogRecord => ({
  id: String(id),
  node: 'n1',
  key: 'install@n1',
  try: 1,
  stream,
  at: `2026-01-01T00:00:0${id % 10}.000Z`,
  data,
  ...more,
});

describe('fitTaskLog', () => {
  it('keeps chunks up to the limit, cuts the one that crosses it on a character boundary and counts the rest', () => {
    const chunks = [
      { stream: 'stdout' as const, at: 1, data: 'abcd' },
      { stream: 'stderr' as const, at: 2, data: 'é€x' }, // 2 + 3 + 1 bytes
      { stream: 'stdout' as const, at: 3, data: 'zz' },
    ];
    const fit = fitTaskLog(chunks, 0, 7);
    expect(fit.kept).toEqual([chunks[0], { stream: 'stderr', at: 2, data: 'é' }]);
    expect(fit.keptBytes).toBe(6);
    expect(fit.droppedBytes).toBe(4 + 2);
  });

  it('keeps nothing once the try used its budget', () => {
    expect(fitTaskLog([{ stream: 'stdout', at: 1, data: 'abc' }], 10, 10)).toEqual({
      kept: [],
      keptBytes: 0,
      droppedBytes: 3,
    });
  });

  it('measures UTF-8 as Buffer does, surrogate pairs included', () => {
    for (const s of ['', 'a', 'é', '€', '😀x', 'a😀é€']) expect(utf8Length(s)).toBe(Buffer.byteLength(s));
    expect(utf8Prefix('a😀b', 4)).toBe('a');
    expect(utf8Prefix('a😀b', 5)).toBe('a😀');
  });
});

describe('TaskLogLineSplitter', () => {
  it('joins a line split across records and keeps stdout and stderr apart, in the order read', () => {
    const split = new TaskLogLineSplitter();
    const lines = [
      ...split.push(rec(1, 'stdout', 'hel')),
      ...split.push(rec(2, 'stderr', 'oops\n')),
      ...split.push(rec(3, 'stdout', 'lo\nnext\n')),
    ];
    expect(lines.map((l) => [l.stream, l.line, l.at])).toEqual([
      ['stderr', 'oops', '2026-01-01T00:00:02.000Z'],
      ['stdout', 'hello', '2026-01-01T00:00:01.000Z'],
      ['stdout', 'next', '2026-01-01T00:00:03.000Z'],
    ]);
    expect(lines.every((l) => l.eol && l.task === 'install' && l.node === 'n1')).toBe(true);
  });

  it('gives a line the task never ended at flush, marked eol false', () => {
    const split = new TaskLogLineSplitter();
    expect(split.push(rec(1, 'stdout', 'no newline at all'))).toEqual([]);
    expect(split.flush()).toEqual([expect.objectContaining({ line: 'no newline at all', eol: false })]);
    expect(split.flush()).toEqual([]);
  });

  it('a cut marker closes the open lines of its try and says how much was left out', () => {
    const split = new TaskLogLineSplitter();
    split.push(rec(1, 'stdout', 'partial'));
    const lines = split.push(rec(2, 'stderr', '', { cut: { limitBytes: 1048576, droppedBytes: 42 } }));
    expect(lines.map((l) => [l.stream, l.line, l.eol])).toEqual([
      ['stdout', 'partial', false],
      ['granule', 'output cut at 1048576 bytes: 42 more bytes were not kept', true],
    ]);
  });
});
