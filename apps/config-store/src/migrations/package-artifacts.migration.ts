import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The digest of a plugin's or release's deployment files in the artifacts bucket, and the
 * removed ones whose deletion waits for the runs that may use them (ADR 0026).
 */
export class PackageArtifacts1798000000000 implements MigrationInterface {
  name = 'PackageArtifacts1798000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "config_plugins" ADD "artifact_digest" text`);
    await queryRunner.query(`ALTER TABLE "config_releases" ADD "artifact_digest" text`);
    await queryRunner.query(
      `CREATE TABLE "config_artifact_removals" ("digest" text NOT NULL, "log_position" bigint NOT NULL, "removed_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "pk_config_artifact_removals" PRIMARY KEY ("digest"))`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "config_artifact_removals"`);
    await queryRunner.query(`ALTER TABLE "config_releases" DROP COLUMN "artifact_digest"`);
    await queryRunner.query(`ALTER TABLE "config_plugins" DROP COLUMN "artifact_digest"`);
  }
}
