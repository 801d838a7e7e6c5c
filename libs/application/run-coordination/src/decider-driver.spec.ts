import type { Decider } from '@granule/core';
import { RunError } from '@granule/run-events';
import { DeciderDriver } from './decider-driver';
import type { DriverEventLog, StreamProcess } from './decider-driver';

/** A counter that ends at `limit`: the smallest decider with state, refusals and an end. */
type Counted = { type: 'Counted'; by: number } | { type: 'Closed' };
type Count = { type: 'Add'; by: number } | { type: 'Close' };
interface Counter {
  total: number;
  closed: boolean;
}
const counter: Decider<Counter, Count, Counted, number> = {
  initialState: () => ({ total: 0, closed: false }),
  decide: (state, command, limit) => {
    if (state.closed) throw new RunError('RUN_ENDED', 'closed');
    if (command.type === 'Close') return [{ type: 'Closed' }];
    const events: Counted[] = [{ type: 'Counted', by: command.by }];
    if (state.total + command.by >= limit) events.push({ type: 'Closed' });
    return events;
  },
  evolve: (state, event) =>
    event.type === 'Counted' ? { ...state, total: state.total + event.by } : { ...state, closed: true },
  isEnded: (state) => state.closed,
};

class MemoryLog implements DriverEventLog<Counted, string> {
  readonly streams = new Map<string, Counted[]>();
  readonly alongside: string[] = [];
  failNext = false;
  down = false;
  async append(id: string, events: Counted[], expected: number, _m?: unknown, also: string[] = []): Promise<number> {
    if (this.down || this.failNext) {
      this.failNext = false;
      throw new Error('database gone');
    }
    const stream = this.streams.get(id) ?? [];
    if (stream.length !== expected) throw new Error(`stream ${id} is at ${stream.length}, expected ${expected}`);
    stream.push(...events);
    this.streams.set(id, stream);
    this.alongside.push(...also);
    return stream.length;
  }
  async read(id: string): Promise<Counted[]> {
    if (this.down) throw new Error('database gone');
    return [...(this.streams.get(id) ?? [])];
  }
  async exists(id: string): Promise<boolean> {
    return this.streams.has(id);
  }
}

function setup(limit = 10) {
  const log = new MemoryLog();
  const leases = new Map<string, string>();
  const me = 'a';
  const reacted: string[] = [];
  const ended: string[] = [];
  const warnings: string[] = [];
  const process: StreamProcess<Counter, Count, Counted, number, { notes: string[] }, string> = {
    decider: counter,
    loadContext: async () => limit,
    newLocal: () => ({ notes: [] }),
    alongside: (stream, events) => ({
      events: events.map((e) => `${stream.id}:${e.type}`),
      recorded: () => stream.local.notes.push('recorded'),
    }),
    react: async (stream, events) => void reacted.push(`${stream.id}:${events.map((e) => e.type).join(',')}`),
    ended: (stream) => void ended.push(stream.id),
  };
  const driver = new DeciderDriver(process, {
    log,
    lease: {
      acquire: async (id) => (leases.has(id) && leases.get(id) !== me ? false : (leases.set(id, me), true)),
      renew: async (id) => leases.get(id) === me,
      release: async (id) => void (leases.get(id) === me && leases.delete(id)),
    },
    logger: { info: () => undefined, warn: (m) => void warnings.push(m), error: () => undefined },
  });
  return { log, leases, driver, reacted, ended, warnings };
}

describe('DeciderDriver', () => {
  it('create - decides, appends at version 0, reacts; events of other streams go in the same append', async () => {
    const w = setup();
    const s = await w.driver.create('r1', [{ type: 'Add', by: 2 }], 10);
    expect(w.log.streams.get('r1')).toEqual([{ type: 'Counted', by: 2 }]);
    expect(s.version).toBe(1);
    expect(w.log.alongside).toEqual(['r1:Counted']);
    expect(s.local.notes).toEqual(['recorded']);
    expect(w.reacted).toEqual(['r1:Counted']);
    expect(w.driver.ids()).toEqual(['r1']);
  });

  it('create - refuses an id the log has seen (RUN_EXISTS) and one another orchestrator holds (RUN_NOT_OWNED)', async () => {
    const w = setup();
    w.log.streams.set('old', [{ type: 'Counted', by: 1 }]);
    await expect(w.driver.create('old', [{ type: 'Add', by: 1 }], 10)).rejects.toMatchObject({ code: 'RUN_EXISTS' });
    w.leases.set('taken', 'b');
    await expect(w.driver.create('taken', [{ type: 'Add', by: 1 }], 10)).rejects.toMatchObject({
      code: 'RUN_NOT_OWNED',
    });
  });

  it('create - nothing recorded: the stream does not exist and its lease is let go', async () => {
    const w = setup();
    w.log.failNext = true;
    await expect(w.driver.create('r1', [{ type: 'Add', by: 1 }], 10)).rejects.toThrow('database gone');
    expect(w.driver.has('r1')).toBe(false);
    expect(w.leases.has('r1')).toBe(false);
  });

  it('commands on one stream run one after the other, each on the state the previous one left', async () => {
    const w = setup(100);
    const s = await w.driver.create('r1', [{ type: 'Add', by: 1 }], 100);
    await Promise.all([2, 3, 4].map((by) => w.driver.run(s, () => w.driver.execute(s, [{ type: 'Add', by }]))));
    expect(w.log.streams.get('r1')?.map((e) => (e.type === 'Counted' ? e.by : 0))).toEqual([1, 2, 3, 4]);
    expect(s.state.total).toBe(10);
  });

  it('an ended stream is let go (lease released, ended told) and its last events are reacted to first', async () => {
    const w = setup(3);
    const s = await w.driver.create('r1', [{ type: 'Add', by: 1 }], 3);
    await w.driver.run(s, () => w.driver.execute(s, [{ type: 'Add', by: 5 }]));
    expect(w.reacted.at(-1)).toBe('r1:Counted,Closed');
    expect(w.ended).toEqual(['r1']);
    expect(w.driver.has('r1')).toBe(false);
    expect(w.leases.has('r1')).toBe(false);
  });

  it('a failed append leaves memory as the log has it; while the log cannot be read the stream stays stale and is folded before its next step', async () => {
    const w = setup(100);
    const s = await w.driver.create('r1', [{ type: 'Add', by: 1 }], 100);
    w.log.down = true;
    await expect(w.driver.run(s, () => w.driver.execute(s, [{ type: 'Add', by: 5 }]))).rejects.toThrow();
    expect(s.stale).toBe(true);
    w.log.down = false;
    await w.driver.run(s, async () => {
      expect(s.stale).toBe(false);
      expect(s.state.total).toBe(1);
      await w.driver.execute(s, [{ type: 'Add', by: 2 }]);
    });
    expect(w.log.streams.get('r1')).toEqual([
      { type: 'Counted', by: 1 },
      { type: 'Counted', by: 2 },
    ]);
  });

  it('an append that meets a newer stream (another writer) folds the stream again, so the next command goes on from the log', async () => {
    const w = setup(100);
    const s = await w.driver.create('r1', [{ type: 'Add', by: 1 }], 100);
    w.log.streams.get('r1')?.push({ type: 'Counted', by: 7 });
    await expect(w.driver.run(s, () => w.driver.execute(s, [{ type: 'Add', by: 1 }]))).rejects.toThrow('expected 1');
    expect([s.version, s.state.total]).toEqual([2, 8]);
    await w.driver.run(s, () => w.driver.execute(s, [{ type: 'Add', by: 1 }]));
    expect(s.state.total).toBe(9);
  });

  it('adopt - takes up a stream from the log with its context; refuses what `take` refuses and one another holds, without reading it', async () => {
    const w = setup(50);
    w.log.streams.set('r1', [{ type: 'Counted', by: 4 }]);
    w.log.streams.set('done', [{ type: 'Closed' }]);
    w.log.streams.set('theirs', [{ type: 'Counted', by: 1 }]);
    w.leases.set('theirs', 'b');
    const s = await w.driver.adopt('r1', (events) => events.length > 0);
    expect([s?.state.total, s?.version, s?.context]).toEqual([4, 1, 50]);
    expect(await w.driver.adopt('done', (events) => events.at(-1)?.type !== 'Closed')).toBeUndefined();
    expect(w.leases.has('done')).toBe(false);
    const readsBefore = w.log.read;
    let read = false;
    w.log.read = async (id) => ((read = true), readsBefore.call(w.log, id));
    expect(await w.driver.adopt('theirs', () => true)).toBeUndefined();
    expect(read).toBe(false);
  });

  it('renewLeases - a stream whose lease is gone is let go with a warning, the others are kept', async () => {
    const w = setup(100);
    await w.driver.create('r1', [{ type: 'Add', by: 1 }], 100);
    await w.driver.create('r2', [{ type: 'Add', by: 1 }], 100);
    w.leases.set('r1', 'b');
    const kept = await w.driver.renewLeases();
    expect(kept.map((s) => s.id)).toEqual(['r2']);
    expect(w.driver.ids()).toEqual(['r2']);
    expect(w.warnings[0]).toMatch(/lost the lease of a run/);
  });
});
