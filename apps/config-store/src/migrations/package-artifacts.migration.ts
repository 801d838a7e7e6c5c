import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The digest of a plugin's or release's deployment files in the artifacts bucket (ADR 0026). */
export class PackageArtifacts1798000000000 implements MigrationInterface {
  name = 'PackageArtifacts1798000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "config_plugins" ADD "artifact_digest" text`);
    await queryRunner.query(`ALTER TABLE "config_releases" ADD "artifact_digest" text`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "config_releases" DROP COLUMN "artifact_digest"`);
    await queryRunner.query(`ALTER TABLE "config_plugins" DROP COLUMN "artifact_digest"`);
  }
}
