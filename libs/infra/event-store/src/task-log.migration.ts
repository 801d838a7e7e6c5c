import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Task logs (ADR 0030): `granule_task_logs` holds the output of every try, a row per piece as
 * the agent read it, in the order it was stored (`id`); `granule_task_log_tries` holds per try
 * the bytes kept and left out past the limit, and the agent messages already stored (a message
 * delivered again is stored once). Kept as long as the run's events are.
 */
export class TaskLogs1798300000000 implements MigrationInterface {
  name = 'TaskLogs1798300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE granule_task_log_tries (
        run_id        text      NOT NULL,
        task_key      text      NOT NULL,
        try           integer   NOT NULL,
        node          text      NOT NULL,
        kept_bytes    bigint    NOT NULL DEFAULT 0,
        dropped_bytes bigint    NOT NULL DEFAULT 0,
        limit_bytes   bigint    NOT NULL,
        stored_seqs   integer[] NOT NULL DEFAULT '{}',
        PRIMARY KEY (run_id, task_key, try)
      )`);
    await queryRunner.query(`
      CREATE TABLE granule_task_logs (
        id           bigserial   PRIMARY KEY,
        run_id       text        NOT NULL,
        node         text        NOT NULL,
        task_key     text        NOT NULL,
        try          integer     NOT NULL,
        stream       text        NOT NULL CHECK (stream IN ('stdout', 'stderr', 'cut')),
        at           timestamptz NOT NULL,
        data         text        NOT NULL,
        cut_limit    bigint,
        cut_dropped  bigint
      )`);
    // A run's log in order, whatever the filter: every read is by run.
    await queryRunner.query(`CREATE INDEX granule_task_logs_run_idx ON granule_task_logs (run_id, id)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE granule_task_logs`);
    await queryRunner.query(`DROP TABLE granule_task_log_tries`);
  }
}
