import {
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  PrimaryGeneratedColumn,
  Unique,
  UpdateDateColumn,
} from 'typeorm';
import { ENVIRONMENT_STATUSES, NODE_STATUSES } from '@granule/config-model';
import type { EnvironmentStatus, GraphRecords, NodeStatus, TaskRecord } from '@granule/config-model';

// Table and column names are snake_case and spelled out, so SQL written by hand (migrations,
// operators' queries) reads the same as the entities.

/** A release installed from a release plugin (seed 003). */
@Entity({ name: 'config_releases' })
@Unique('uq_config_releases_name_version', ['name', 'version'])
export class ReleaseEntity {
  @PrimaryGeneratedColumn({ primaryKeyConstraintName: 'pk_config_releases', name: 'id' })
  id!: number;

  @Column({ name: 'name', type: 'text' })
  name!: string;

  @Column({ name: 'version', type: 'text' })
  version!: string;

  @Column({ name: 'operating_system', type: 'text' })
  operatingSystem!: string;

  @Column({ name: 'description', type: 'text', nullable: true })
  description!: string | null;

  @Column({ name: 'plugin_name', type: 'text' })
  pluginName!: string;

  @Column({ name: 'plugin_version', type: 'text' })
  pluginVersion!: string;

  /** SHA-256 (hex) of its deployment files in the artifacts bucket; null when it has none (ADR 0026). */
  @Column({ name: 'artifact_digest', type: 'text', nullable: true })
  artifactDigest!: string | null;

  @Column({ name: 'attributes', type: 'jsonb' })
  attributes!: Record<string, unknown>;

  /** Task records per graph type; `default` is what GET/PUT deployment_tasks read and write. */
  @Column({ name: 'graphs', type: 'jsonb' })
  graphs!: GraphRecords;

  @CreateDateColumn({ name: 'installed_at', type: 'timestamptz' })
  installedAt!: Date;
}

/** One release a plugin extends and the plugin's graphs for it. */
export interface StoredPluginRelease {
  os: string;
  version: string;
  graphs: GraphRecords;
}

@Entity({ name: 'config_plugins' })
@Unique('uq_config_plugins_name_version', ['name', 'version'])
export class PluginEntity {
  @PrimaryGeneratedColumn({ primaryKeyConstraintName: 'pk_config_plugins', name: 'id' })
  id!: number;

  @Column({ name: 'name', type: 'text' })
  name!: string;

  @Column({ name: 'version', type: 'text' })
  version!: string;

  @Column({ name: 'package_version', type: 'text' })
  packageVersion!: string;

  @Column({ name: 'title', type: 'text', nullable: true })
  title!: string | null;

  @Column({ name: 'description', type: 'text', nullable: true })
  description!: string | null;

  @Column({ name: 'is_hotpluggable', type: 'boolean', default: false })
  isHotpluggable!: boolean;

  @Column({ name: 'releases', type: 'jsonb' })
  releases!: StoredPluginRelease[];

  /** The folder or package it was installed from, as the installer named it. */
  @Column({ name: 'source', type: 'text' })
  source!: string;

  /** SHA-256 (hex) of its deployment files in the artifacts bucket; null when it has none (ADR 0026). */
  @Column({ name: 'artifact_digest', type: 'text', nullable: true })
  artifactDigest!: string | null;

  @CreateDateColumn({ name: 'installed_at', type: 'timestamptz' })
  installedAt!: Date;
}

/** An environment (a Fuel cluster). */
@Entity({ name: 'config_environments' })
export class EnvironmentEntity {
  @PrimaryGeneratedColumn({ primaryKeyConstraintName: 'pk_config_environments', name: 'id' })
  id!: number;

  @Index('uq_config_environments_name', { unique: true })
  @Column({ name: 'name', type: 'text' })
  name!: string;

  @Column({ name: 'release_id', type: 'integer' })
  releaseId!: number;

  @ManyToOne(() => ReleaseEntity, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'release_id', foreignKeyConstraintName: 'fk_config_environments_release' })
  release?: ReleaseEntity;

  @Column({
    name: 'status',
    type: 'enum',
    enum: ENVIRONMENT_STATUSES,
    enumName: 'config_environment_status',
    default: 'new',
  })
  status!: EnvironmentStatus;

  @Column({ name: 'settings', type: 'jsonb' })
  settings!: Record<string, unknown>;

  /** Per-environment task overrides (deployment_tasks records). */
  @Column({ name: 'task_overrides', type: 'jsonb' })
  taskOverrides!: TaskRecord[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}

/** A plugin enabled in an environment; a plugin with any such row cannot be removed. */
@Entity({ name: 'config_environment_plugins' })
export class EnvironmentPluginEntity {
  @PrimaryColumn({ primaryKeyConstraintName: 'pk_config_environment_plugins', name: 'environment_id', type: 'integer' })
  environmentId!: number;

  @PrimaryColumn({ primaryKeyConstraintName: 'pk_config_environment_plugins', name: 'plugin_id', type: 'integer' })
  pluginId!: number;

  @ManyToOne(() => EnvironmentEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'environment_id', foreignKeyConstraintName: 'fk_config_environment_plugins_environment' })
  environment?: EnvironmentEntity;

  @ManyToOne(() => PluginEntity, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'plugin_id', foreignKeyConstraintName: 'fk_config_environment_plugins_plugin' })
  plugin?: PluginEntity;

  @CreateDateColumn({ name: 'enabled_at', type: 'timestamptz' })
  enabledAt!: Date;
}

@Entity({ name: 'config_nodes' })
export class NodeEntity {
  @PrimaryColumn({ primaryKeyConstraintName: 'pk_config_nodes', name: 'uid', type: 'text' })
  uid!: string;

  @Column({ name: 'hostname', type: 'text' })
  hostname!: string;

  @Column({ name: 'address', type: 'text', nullable: true })
  address!: string | null;

  @Index('ix_config_nodes_environment')
  @Column({ name: 'environment_id', type: 'integer', nullable: true })
  environmentId!: number | null;

  @ManyToOne(() => EnvironmentEntity, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'environment_id', foreignKeyConstraintName: 'fk_config_nodes_environment' })
  environment?: EnvironmentEntity;

  @Column({ name: 'roles', type: 'text', array: true })
  roles!: string[];

  @Column({ name: 'pending_roles', type: 'text', array: true })
  pendingRoles!: string[];

  @Column({ name: 'tags', type: 'text', array: true })
  tags!: string[];

  @Column({ name: 'labels', type: 'jsonb' })
  labels!: Record<string, string>;

  @Column({ name: 'rack', type: 'text', nullable: true })
  rack!: string | null;

  @Column({ name: 'status', type: 'enum', enum: NODE_STATUSES, enumName: 'config_node_status', default: 'discover' })
  status!: NodeStatus;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}

/** A deployment strategy document (seed 004), validated on upload. */
@Entity({ name: 'config_strategies' })
export class StrategyEntity {
  @PrimaryColumn({ primaryKeyConstraintName: 'pk_config_strategies', name: 'name', type: 'text' })
  name!: string;

  /** The text as uploaded. */
  @Column({ name: 'document', type: 'text' })
  document!: string;

  /** Group names in document order. */
  @Column({ name: 'groups', type: 'text', array: true })
  groups!: string[];

  @UpdateDateColumn({ name: 'uploaded_at', type: 'timestamptz' })
  uploadedAt!: Date;
}

/** One-time facts about this store, e.g. that the basic release was pre-installed once. */
@Entity({ name: 'config_store_flags' })
export class StoreFlagEntity {
  @PrimaryColumn({ primaryKeyConstraintName: 'pk_config_store_flags', name: 'name', type: 'text' })
  name!: string;

  @Column({ name: 'value', type: 'jsonb' })
  value!: unknown;

  @CreateDateColumn({ name: 'set_at', type: 'timestamptz' })
  setAt!: Date;
}

/** Who changed the configuration: every change asked for over NATS or HTTP, with its caller and outcome. */
@Entity({ name: 'config_audit' })
@Index('ix_config_audit_at', ['at'])
export class ConfigAuditEntity {
  @PrimaryGeneratedColumn({ primaryKeyConstraintName: 'pk_config_audit', name: 'id', type: 'bigint' })
  id!: string;

  @CreateDateColumn({ name: 'at', type: 'timestamptz' })
  at!: Date;

  /** The identity that signed the request (NATS), or the API token's name (HTTP); `anonymous` without auth. */
  @Column({ name: 'caller', type: 'text' })
  caller!: string;

  @Column({ name: 'role', type: 'text', nullable: true })
  role!: string | null;

  /** `nats` or `http`. */
  @Column({ name: 'transport', type: 'text' })
  transport!: string;

  /** The operation, e.g. `node.add`. */
  @Column({ name: 'operation', type: 'text' })
  operation!: string;

  /** What it names: an id, uid or name from the request, when it has one. */
  @Column({ name: 'target', type: 'text', nullable: true })
  target!: string | null;

  /** `ok`, or the refusal's code. */
  @Column({ name: 'outcome', type: 'text' })
  outcome!: string;
}

/**
 * A node agent's NATS credential, one row per key, as the admin who holds the trust store
 * recorded it (`credential.record`). Keyed apart from `config_nodes`: a node may be enrolled
 * before it is added, and its credentials outlive its removal (NATS still refuses them).
 */
@Entity({ name: 'config_node_credentials' })
@Index('ix_config_node_credentials_uid', ['uid'])
export class NodeCredentialEntity {
  @PrimaryColumn({ primaryKeyConstraintName: 'pk_config_node_credentials', name: 'public_key', type: 'text' })
  publicKey!: string;

  @Column({ name: 'uid', type: 'text' })
  uid!: string;

  /** The identity name the credential carries (`agent-<uid>`). */
  @Column({ name: 'identity', type: 'text' })
  identity!: string;

  @Column({ name: 'issued_at', type: 'timestamptz' })
  issuedAt!: Date;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt!: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;

  @UpdateDateColumn({ name: 'recorded_at', type: 'timestamptz' })
  recordedAt!: Date;
}

/** Every entity of the config-store, for the DataSource. */
/**
 * The deployment files of a removed plugin or release, kept in the artifacts bucket until
 * every run that was not ended when it was removed has ended (ADR 0026).
 */
@Entity({ name: 'config_artifact_removals' })
export class ArtifactRemovalEntity {
  @PrimaryColumn({ primaryKeyConstraintName: 'pk_config_artifact_removals', name: 'digest', type: 'text' })
  digest!: string;

  /** The event log's last global position when it was removed: runs requested up to there may use it. */
  @Column({ name: 'log_position', type: 'bigint' })
  logPosition!: string;

  @CreateDateColumn({ name: 'removed_at', type: 'timestamptz' })
  removedAt!: Date;
}

export const CONFIG_STORE_ENTITIES = [
  ReleaseEntity,
  PluginEntity,
  EnvironmentEntity,
  EnvironmentPluginEntity,
  NodeEntity,
  StrategyEntity,
  StoreFlagEntity,
  ConfigAuditEntity,
  NodeCredentialEntity,
  ArtifactRemovalEntity,
];
