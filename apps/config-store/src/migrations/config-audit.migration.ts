import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The audit of configuration changes (`ConfigAuditEntity`): who asked, over which transport, and how it ended. */
export class ConfigAudit1796000000000 implements MigrationInterface {
  name = 'ConfigAudit1796000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "config_audit" ("id" BIGSERIAL NOT NULL, "at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "caller" text NOT NULL, "role" text, "transport" text NOT NULL, "operation" text NOT NULL, "target" text, "outcome" text NOT NULL, CONSTRAINT "pk_config_audit" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "ix_config_audit_at" ON "config_audit" ("at")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "ix_config_audit_at"`);
    await queryRunner.query(`DROP TABLE "config_audit"`);
  }
}
