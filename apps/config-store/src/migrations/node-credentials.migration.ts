import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Node agents' NATS credentials (`NodeCredentialEntity`), one row per key, as `granule agent enroll|revoke` record them. */
export class NodeCredentials1797000000000 implements MigrationInterface {
  name = 'NodeCredentials1797000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "config_node_credentials" ("public_key" text NOT NULL, "uid" text NOT NULL, "identity" text NOT NULL, "issued_at" TIMESTAMP WITH TIME ZONE NOT NULL, "expires_at" TIMESTAMP WITH TIME ZONE, "revoked_at" TIMESTAMP WITH TIME ZONE, "recorded_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "pk_config_node_credentials" PRIMARY KEY ("public_key"))`,
    );
    await queryRunner.query(`CREATE INDEX "ix_config_node_credentials_uid" ON "config_node_credentials" ("uid")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "ix_config_node_credentials_uid"`);
    await queryRunner.query(`DROP TABLE "config_node_credentials"`);
  }
}
