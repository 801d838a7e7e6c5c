import { DataSource } from 'typeorm';
import { ConcurrencyError, createTestDatabase, EventStore, type TestDatabase } from '@granule/event-store';
import type { RunEvent } from '@granule/run-events';
import type { NodeLockAppend } from '@granule/run-coordination';
import { PostgresNodeLockLog } from './node-lock-log.adapter';
import { PostgresRunEventLog } from './run-event-log.adapter';

const AT = '2026-01-01T00:00:00.000Z';
const requested = (runId: string): RunEvent => ({
  type: 'DeploymentRequested',
  data: { runId, graph: 'default', dryRun: false, noop: false },
});

describe('node locks in PostgreSQL (ADR 0024)', () => {
  let db: TestDatabase;
  /** Two replicas: each its own pool and store on the one database. */
  let replicas: { log: PostgresRunEventLog; locks: PostgresNodeLockLog }[];
  let second: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase('node_locks');
    second = new DataSource({ type: 'postgres', url: db.url, synchronize: false });
    await second.initialize();
    replicas = [db.dataSource, second].map((ds) => {
      const store = new EventStore(ds);
      return { log: new PostgresRunEventLog(store), locks: new PostgresNodeLockLog(store) };
    });
  }, 30_000);

  afterAll(async () => {
    await second.destroy();
    await db.drop();
  });

  /** What a coordinator does: read who holds the nodes, and take them at the versions it read. */
  async function acquire(replica: number, runId: string, nodes: string[]): Promise<'won' | 'lost'> {
    const { log, locks } = replicas[replica];
    const view = await locks.read(nodes);
    if (nodes.some((n) => view.holders.has(n))) return 'lost';
    const taken: NodeLockAppend[] = nodes.map((uid) => ({
      type: 'NodeLocked',
      data: { uid, runId, at: AT },
      expectedVersion: view.versions.get(uid) ?? 0,
    }));
    try {
      await log.append(runId, [requested(runId)], 0, undefined, taken);
      return 'won';
    } catch (err) {
      if (err instanceof ConcurrencyError) return 'lost';
      throw err;
    }
  }

  it('two acquirers of one node at once - exactly one wins, the other sees it as the holder', async () => {
    for (let round = 0; round < 20; round++) {
      const node = `race-${round}`;
      const results = await Promise.all([acquire(0, `a${round}`, [node]), acquire(1, `b${round}`, [node])]);
      expect(results.filter((r) => r === 'won')).toHaveLength(1);
      const winner = results[0] === 'won' ? `a${round}` : `b${round}`;
      const view = await replicas[1].locks.read([node]);
      expect(view.holders.get(node)).toBe(winner);
      expect(view.versions.get(node)).toBe(1);
      // The loser's run was not recorded either: the run's events and its locks are one transaction.
      const loser = results[0] === 'won' ? `b${round}` : `a${round}`;
      expect(await replicas[0].log.exists(loser)).toBe(false);
    }
  }, 30_000);

  it('overlapping node sets taken at once - one wins, and no node ends up held by both', async () => {
    for (let round = 0; round < 10; round++) {
      const [x, y, z] = [`x${round}`, `y${round}`, `z${round}`];
      const results = await Promise.all([acquire(0, `p${round}`, [x, y]), acquire(1, `q${round}`, [y, z])]);
      expect(results.filter((r) => r === 'won')).toHaveLength(1);
      const view = await replicas[0].locks.read([x, y, z]);
      const holders = new Set(view.holders.values());
      expect(holders.size).toBe(1);
    }
  }, 30_000);

  it('a node released by its holder - free, and taken next at the released version', async () => {
    expect(await acquire(0, 'hold-1', ['n-rel'])).toBe('won');
    expect(await acquire(1, 'hold-2', ['n-rel'])).toBe('lost');
    await replicas[0].log.append('hold-1', [{ type: 'DeploymentStopped', data: { at: AT, failedNodes: [] } }], 1, {}, [
      { type: 'NodeReleased', data: { uid: 'n-rel', runId: 'hold-1', at: AT }, expectedVersion: 'any' },
    ]);
    const view = await replicas[1].locks.read(['n-rel']);
    expect(view.holders.has('n-rel')).toBe(false);
    expect(view.versions.get('n-rel')).toBe(2);
    expect(await acquire(1, 'hold-3', ['n-rel'])).toBe('won');
  });
});
