import { Client } from 'pg';
import { Column, Entity, PrimaryColumn } from 'typeorm';
import { createTestDatabase, pendingSchemaQueries, type TestDatabase } from './test-database';

@Entity({ name: 'schema_probe' })
class SchemaProbeEntity {
  @PrimaryColumn({ type: 'text' })
  id!: string;

  @Column({ type: 'enum', enum: ['a', 'b'], enumName: 'schema_probe_state' })
  state!: 'a' | 'b';

  @Column({ type: 'text', array: true })
  tags!: string[];

  @Column({ type: 'text', array: true })
  labels!: string[];

  @Column({ type: 'integer' })
  weight!: number;
}

/** Counts queries sent to a pg client while another query of it is still running (pg 9 refuses them). */
function watchOverlappingQueries(): { count: () => number; restore: () => void } {
  const query = Client.prototype.query as (...args: unknown[]) => unknown;
  const running = new WeakMap<object, number>();
  let overlapping = 0;
  Client.prototype.query = function (this: Client, ...args: unknown[]) {
    const n = running.get(this) ?? 0;
    if (n > 0) overlapping++;
    running.set(this, n + 1);
    const done = (): void => void running.set(this, (running.get(this) ?? 1) - 1);
    const result = query.apply(this, args) as Promise<unknown> | undefined;
    if (typeof result?.then === 'function') result.then(done, done);
    else done();
    return result;
  } as typeof Client.prototype.query;
  return {
    count: () => overlapping,
    restore: () => void (Client.prototype.query = query as typeof Client.prototype.query),
  };
}

describe('pendingSchemaQueries', () => {
  let db: TestDatabase;
  const watch = watchOverlappingQueries();

  beforeAll(async () => {
    db = await createTestDatabase('pending_schema', { migrations: [], entities: [SchemaProbeEntity] });
    // The table as an older migration left it: no weight column yet.
    await db.dataSource.query(`CREATE TYPE schema_probe_state AS ENUM ('a', 'b')`);
    await db.dataSource.query(
      `CREATE TABLE schema_probe (id text PRIMARY KEY, state schema_probe_state NOT NULL, tags text[] NOT NULL, labels text[] NOT NULL)`,
    );
  });

  afterAll(async () => {
    watch.restore();
    await db?.drop();
  });

  it('names what the entities add, reading enum and array columns without overlapping queries on the client', async () => {
    expect(await pendingSchemaQueries(db.dataSource)).toEqual([
      'ALTER TABLE "schema_probe" ADD "weight" integer NOT NULL',
    ]);
    await db.dataSource.query(`ALTER TABLE schema_probe ADD weight integer NOT NULL`);
    expect(await pendingSchemaQueries(db.dataSource)).toEqual([]);
    expect(watch.count()).toBe(0);
  });
});
