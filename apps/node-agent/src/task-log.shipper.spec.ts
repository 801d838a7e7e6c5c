import type { TaskLogMessage } from '@granule/contracts';
import { LOG_MESSAGE_BYTES, TaskLogShipper } from './task-log.shipper';

const target = { runId: 'r1', key: 'big@n1', node: 'n1', attempt: 1, dispatchId: 'r1/big@n1/1' };

function shipper(limit: number): { ship: TaskLogShipper; sent: { message: TaskLogMessage; msgID: string }[] } {
  const sent: { message: TaskLogMessage; msgID: string }[] = [];
  let t = 0;
  const ship = new TaskLogShipper(
    target,
    async (message, msgID) => {
      await new Promise((r) => setImmediate(r));
      sent.push({ message, msgID });
    },
    limit,
    () => ++t,
  );
  return { ship, sent };
}

const text = (sent: { message: TaskLogMessage }[], tryNumber = 1): string =>
  sent
    .filter((s) => s.message.try === tryNumber)
    .flatMap((s) => s.message.chunks.map((c) => c.data))
    .join('');

describe('TaskLogShipper', () => {
  it('sends the output in order, in messages of bounded size, numbered per try, each with its own id', async () => {
    const { ship, sent } = shipper(1024 * 1024);
    const piece = 'x'.repeat(16 * 1024);
    for (let i = 0; i < 10; i++) ship.add({ stream: i % 2 ? 'stderr' : 'stdout', data: piece, seq: i, try: 1 });
    await ship.close();
    expect(sent.map((s) => s.message.seq)).toEqual(sent.map((_, i) => i));
    expect(sent.every((s) => s.message.chunks.reduce((n, c) => n + c.data.length, 0) <= LOG_MESSAGE_BYTES)).toBe(true);
    expect(text(sent)).toBe(piece.repeat(10));
    expect(new Set(sent.map((s) => s.msgID)).size).toBe(sent.length);
    expect(sent.at(-1)?.message.end).toBe(true);
    expect(sent.some((s) => s.message.cut)).toBe(false);
  });

  it('cuts a try at the limit and says on its last message how much was left out', async () => {
    const { ship, sent } = shipper(100 * 1024);
    for (let i = 0; i < 50; i++) ship.add({ stream: 'stdout', data: 'y'.repeat(4096), seq: i, try: 1 });
    await ship.close();
    expect(text(sent).length).toBe(100 * 1024);
    expect(sent.at(-1)?.message).toMatchObject({
      end: true,
      cut: { limitBytes: 100 * 1024, droppedBytes: 50 * 4096 - 100 * 1024 },
    });
  });

  it('each try has its own budget and numbering; the previous try is ended when the next begins', async () => {
    const { ship, sent } = shipper(64 * 1024);
    ship.add({ stream: 'stdout', data: 'a'.repeat(70 * 1024), seq: 0, try: 1 });
    ship.add({ stream: 'stdout', data: 'second', seq: 1, try: 2 });
    await ship.close();
    expect(sent.map((s) => [s.message.try, s.message.seq, s.message.end ?? false, !!s.message.cut])).toEqual([
      [1, 0, false, false],
      [1, 1, true, true],
      [2, 0, true, false],
    ]);
    expect(text(sent, 2)).toBe('second');
  });

  it('a task that prints nothing sends nothing', async () => {
    const { ship, sent } = shipper(1024);
    await ship.close();
    expect(sent).toEqual([]);
  });

  it('close rejects when the stream did not take a message, so the caller knows the log is incomplete', async () => {
    const ship = new TaskLogShipper(target, () => Promise.reject(new Error('no stream')), 1024);
    ship.add({ stream: 'stdout', data: 'x', seq: 0, try: 1 });
    await expect(ship.close()).rejects.toThrow('no stream');
  });
});
