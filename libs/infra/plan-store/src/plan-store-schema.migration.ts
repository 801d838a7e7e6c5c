import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Creates `granule_plans`: one row per plan graph-planner produced. The plan itself is kept as
 * gzip of the JSON `granule plan -o json` prints (a 10,000-node plan is ~400 MB of JSON, far
 * beyond a NATS message), the summary columns answer "what is this plan" without unpacking it.
 */
export class PlanStoreSchema1733000000000 implements MigrationInterface {
  name = 'PlanStoreSchema1733000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE granule_plans (
        id          text        PRIMARY KEY,
        hash        text        NOT NULL,
        created_at  timestamptz NOT NULL DEFAULT now(),
        instances   integer,
        tasks       integer,
        nodes       jsonb,
        document    bytea       NOT NULL,
        inputs      jsonb
      )`);
    // Finding an identical earlier plan (same hash) is how callers can tell "nothing changed".
    await queryRunner.query(`CREATE INDEX granule_plans_hash_idx ON granule_plans (hash)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE granule_plans`);
  }
}

/** Every plan-store migration, oldest first; add them to the service's DataSource `migrations`. */
export const PLAN_STORE_MIGRATIONS: Array<new () => MigrationInterface> = [PlanStoreSchema1733000000000];
