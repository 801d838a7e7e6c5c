import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The config-store's tables: releases, plugins, environments (and the plugins enabled in
 * each), nodes, deployment strategies, and one-time flags. Generated from the entities with
 * TypeORM's schema builder; `config-store-schema.int.spec.ts` fails when the two drift.
 */
export class ConfigStoreSchema1733000000000 implements MigrationInterface {
  name = 'ConfigStoreSchema1733000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "config_releases" ("id" SERIAL NOT NULL, "name" text NOT NULL, "version" text NOT NULL, "operating_system" text NOT NULL, "description" text, "plugin_name" text NOT NULL, "plugin_version" text NOT NULL, "attributes" jsonb NOT NULL, "graphs" jsonb NOT NULL, "installed_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "uq_config_releases_name_version" UNIQUE ("name", "version"), CONSTRAINT "pk_config_releases" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "config_plugins" ("id" SERIAL NOT NULL, "name" text NOT NULL, "version" text NOT NULL, "package_version" text NOT NULL, "title" text, "description" text, "is_hotpluggable" boolean NOT NULL DEFAULT false, "releases" jsonb NOT NULL, "source" text NOT NULL, "installed_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "uq_config_plugins_name_version" UNIQUE ("name", "version"), CONSTRAINT "pk_config_plugins" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE TYPE "public"."config_environment_status" AS ENUM('new', 'deployment', 'operational', 'partially_deployed', 'error', 'stopped')`,
    );
    await queryRunner.query(
      `CREATE TABLE "config_environments" ("id" SERIAL NOT NULL, "name" text NOT NULL, "release_id" integer NOT NULL, "status" "public"."config_environment_status" NOT NULL DEFAULT 'new', "settings" jsonb NOT NULL, "task_overrides" jsonb NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "pk_config_environments" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "uq_config_environments_name" ON "config_environments"  ("name")`);
    await queryRunner.query(
      `CREATE TABLE "config_environment_plugins" ("environment_id" integer NOT NULL, "plugin_id" integer NOT NULL, "enabled_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "pk_config_environment_plugins" PRIMARY KEY ("environment_id", "plugin_id"))`,
    );
    await queryRunner.query(
      `CREATE TYPE "public"."config_node_status" AS ENUM('discover', 'provisioning', 'provisioned', 'deploying', 'ready', 'error', 'offline', 'stopped')`,
    );
    await queryRunner.query(
      `CREATE TABLE "config_nodes" ("uid" text NOT NULL, "hostname" text NOT NULL, "address" text, "environment_id" integer, "roles" text array NOT NULL, "pending_roles" text array NOT NULL, "tags" text array NOT NULL, "labels" jsonb NOT NULL, "rack" text, "status" "public"."config_node_status" NOT NULL DEFAULT 'discover', "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "pk_config_nodes" PRIMARY KEY ("uid"))`,
    );
    await queryRunner.query(`CREATE INDEX "ix_config_nodes_environment" ON "config_nodes"  ("environment_id")`);
    await queryRunner.query(
      `CREATE TABLE "config_strategies" ("name" text NOT NULL, "document" text NOT NULL, "groups" text array NOT NULL, "uploaded_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "pk_config_strategies" PRIMARY KEY ("name"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "config_store_flags" ("name" text NOT NULL, "value" jsonb NOT NULL, "set_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "pk_config_store_flags" PRIMARY KEY ("name"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "config_environments" ADD CONSTRAINT "fk_config_environments_release" FOREIGN KEY ("release_id") REFERENCES "config_releases"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "config_environment_plugins" ADD CONSTRAINT "fk_config_environment_plugins_environment" FOREIGN KEY ("environment_id") REFERENCES "config_environments"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "config_environment_plugins" ADD CONSTRAINT "fk_config_environment_plugins_plugin" FOREIGN KEY ("plugin_id") REFERENCES "config_plugins"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "config_nodes" ADD CONSTRAINT "fk_config_nodes_environment" FOREIGN KEY ("environment_id") REFERENCES "config_environments"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "config_nodes" DROP CONSTRAINT "fk_config_nodes_environment"`);
    await queryRunner.query(
      `ALTER TABLE "config_environment_plugins" DROP CONSTRAINT "fk_config_environment_plugins_plugin"`,
    );
    await queryRunner.query(
      `ALTER TABLE "config_environment_plugins" DROP CONSTRAINT "fk_config_environment_plugins_environment"`,
    );
    await queryRunner.query(`ALTER TABLE "config_environments" DROP CONSTRAINT "fk_config_environments_release"`);
    await queryRunner.query(`DROP TABLE "config_store_flags"`);
    await queryRunner.query(`DROP TABLE "config_strategies"`);
    await queryRunner.query(`DROP INDEX "public"."ix_config_nodes_environment"`);
    await queryRunner.query(`DROP TABLE "config_nodes"`);
    await queryRunner.query(`DROP TYPE "public"."config_node_status"`);
    await queryRunner.query(`DROP TABLE "config_environment_plugins"`);
    await queryRunner.query(`DROP INDEX "public"."uq_config_environments_name"`);
    await queryRunner.query(`DROP TABLE "config_environments"`);
    await queryRunner.query(`DROP TYPE "public"."config_environment_status"`);
    await queryRunner.query(`DROP TABLE "config_plugins"`);
    await queryRunner.query(`DROP TABLE "config_releases"`);
  }
}
