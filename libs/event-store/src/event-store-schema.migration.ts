import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Creates the event log (emmett's layout, simplified): one row per event with a per-stream
 * version and the writing transaction's id for commit-ordered reads; one row per stream
 * holding its current version, locked by writers; one row per consumer checkpoint.
 */
export class EventStoreSchema1732000000000 implements MigrationInterface {
  name = 'EventStoreSchema1732000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // The streams row is the concurrency gate: appenders update it with a version check, so
    // a losing writer fails on that row (or waits on its lock) before inserting anything.
    await queryRunner.query(`
      CREATE TABLE granule_streams (
        stream_id   text        PRIMARY KEY,
        stream_type text        NOT NULL,
        version     bigint      NOT NULL CHECK (version > 0),
        created_at  timestamptz NOT NULL DEFAULT now(),
        updated_at  timestamptz NOT NULL DEFAULT now()
      )`);
    // No foreign key to granule_streams: the insert path is hot and the gate row is always
    // written in the same transaction.
    await queryRunner.query(`
      CREATE TABLE granule_events (
        global_position bigserial   PRIMARY KEY,
        stream_id       text        NOT NULL,
        stream_version  bigint      NOT NULL CHECK (stream_version > 0),
        transaction_id  xid8        NOT NULL DEFAULT pg_current_xact_id(),
        type            text        NOT NULL,
        schema_version  integer     NOT NULL DEFAULT 1,
        data            jsonb       NOT NULL,
        metadata        jsonb       NOT NULL DEFAULT '{}'::jsonb,
        created_at      timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT granule_events_stream_version_key UNIQUE (stream_id, stream_version)
      )`);
    await queryRunner.query(`CREATE INDEX granule_events_commit_order_idx ON granule_events (transaction_id, global_position)`);
    await queryRunner.query(`
      CREATE TABLE granule_checkpoints (
        consumer        text        PRIMARY KEY,
        transaction_id  xid8        NOT NULL,
        global_position bigint      NOT NULL,
        updated_at      timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE granule_checkpoints`);
    await queryRunner.query(`DROP TABLE granule_events`);
    await queryRunner.query(`DROP TABLE granule_streams`);
  }
}

/** Every event-store migration, oldest first; add them to the service's DataSource `migrations`. */
export const EVENT_STORE_MIGRATIONS: Array<new () => MigrationInterface> = [EventStoreSchema1732000000000];
