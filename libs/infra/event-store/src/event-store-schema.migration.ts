import type { MigrationInterface, QueryRunner } from 'typeorm';
import { TaskLogs1798300000000 } from './task-log.migration';

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
    await queryRunner.query(
      `CREATE INDEX granule_events_commit_order_idx ON granule_events (transaction_id, global_position)`,
    );
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

/**
 * Keeps each stream's last event type on its `granule_streams` row (every append sets it in the
 * statement that claims the versions), indexed with the stream type. "Which runs are still
 * open" then reads the index entries of open runs only, instead of joining every stream ever
 * written to its last event: that join grew with history and ran on every orchestrator tick.
 * Existing rows are filled from their streams' last events; a trigger keeps the rows that
 * writers of the previous release touch during the upgrade right (ADR 0010).
 */
export class EventStoreStreamLastEventType1795000000000 implements MigrationInterface {
  name = 'EventStoreStreamLastEventType1795000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE granule_streams ADD COLUMN last_event_type text`);
    // Writers of the previous release append without setting the column and keep running while
    // the upgrade rolls out: once per insert statement this trigger sets it on every stream whose
    // newest event it inserted and whose row says otherwise. Current writers set it in the claim
    // statement already, so for them it only looks the rows up and writes nothing.
    await queryRunner.query(`
      CREATE FUNCTION granule_streams_keep_last_event_type() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE granule_streams s SET last_event_type = n.type
          FROM (SELECT DISTINCT ON (stream_id) stream_id, stream_version, type
                  FROM inserted ORDER BY stream_id, stream_version DESC) n
         WHERE s.stream_id = n.stream_id AND s.version = n.stream_version
           AND s.last_event_type IS DISTINCT FROM n.type;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER granule_events_keep_last_event_type AFTER INSERT ON granule_events
        REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT
        EXECUTE FUNCTION granule_streams_keep_last_event_type()`);
    await queryRunner.query(`
      UPDATE granule_streams s SET last_event_type = e.type
        FROM granule_events e
       WHERE e.stream_id = s.stream_id AND e.stream_version = s.version`);
    await queryRunner.query(
      `CREATE INDEX granule_streams_type_last_event_idx ON granule_streams (stream_type, last_event_type)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX granule_streams_type_last_event_idx`);
    await queryRunner.query(`DROP TRIGGER granule_events_keep_last_event_type ON granule_events`);
    await queryRunner.query(`DROP FUNCTION granule_streams_keep_last_event_type()`);
    await queryRunner.query(`ALTER TABLE granule_streams DROP COLUMN last_event_type`);
  }
}

/** Every event-store migration, oldest first; add them to the service's DataSource `migrations`. */
export const EVENT_STORE_MIGRATIONS: Array<new () => MigrationInterface> = [
  EventStoreSchema1732000000000,
  EventStoreStreamLastEventType1795000000000,
  TaskLogs1798300000000,
];
