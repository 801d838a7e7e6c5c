import type { Diagnostic } from '@granule/core';
import type { EnvironmentStatus, NodeStatus, TaskRecord } from '@granule/config-model';

// Replies of the config-store API. Times are ISO 8601 strings.

export interface ReleaseView {
  id: number;
  name: string;
  version: string;
  operating_system: string;
  description: string | null;
  /** The release plugin it was installed from. */
  plugin: { name: string; version: string };
  /** Graph types and how many tasks each has. */
  graphs: Record<string, number>;
  attributes: Record<string, unknown>;
  installed_at: string;
}

export interface PluginView {
  id: number;
  name: string;
  version: string;
  package_version: string;
  title: string | null;
  description: string | null;
  is_hotpluggable: boolean;
  /** Releases the plugin extends, with its graph types there. */
  releases: { os: string; version: string; graphs: Record<string, number> }[];
  /** Ids of the environments it is enabled in. */
  environments: number[];
  source: string;
  installed_at: string;
}

export interface EnvironmentView {
  id: number;
  name: string;
  status: EnvironmentStatus;
  release: { id: number; name: string; version: string };
  settings: Record<string, unknown>;
  plugins: { id: number; name: string; version: string }[];
  nodes: string[];
  /** How many per-environment task overrides there are. */
  task_overrides: number;
  created_at: string;
  updated_at: string;
}

export interface NodeView {
  uid: string;
  hostname: string;
  address: string | null;
  environment: number | null;
  roles: string[];
  pending_roles: string[];
  tags: string[];
  labels: Record<string, string>;
  rack: string | null;
  status: NodeStatus;
  /** Its agent's NATS credential as last recorded by `granule agent enroll|revoke`; null when none is. */
  credential: NodeCredentialView | null;
  created_at: string;
  updated_at: string;
}

/** What a credential allows now: `active` connects; NATS refuses `expired` and `revoked` ones. */
export type CredentialState = 'active' | 'expired' | 'revoked';

/**
 * A node's agent credential, worked out when read: `active` while any credential recorded for
 * the node is neither revoked nor expired (with the latest expiry among them, null when one
 * never expires); otherwise the state of the newest one.
 */
export interface NodeCredentialView {
  state: CredentialState;
  expires_at: string | null;
  revoked_at: string | null;
}

/** Reply of `credential.record`: the credential as now recorded. */
export interface RecordedCredentialView {
  uid: string;
  identity: string;
  public_key: string;
  issued_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  state: CredentialState;
}

export interface StrategyView {
  name: string;
  /** Group names in document order. */
  groups: string[];
  /** The document as uploaded (YAML text). */
  document: string;
  uploaded_at: string;
}

/** Reply of `release.install` and `plugin.install`. */
export interface InstallResult {
  kind: 'plugin' | 'release';
  plugin?: PluginView;
  releases: ReleaseView[];
  /** Validation warnings and notes (never errors: those refuse the install). */
  warnings: Diagnostic[];
}

/** Reply of `tasks.get` / `tasks.put`. */
export interface TasksView {
  scope: 'release' | 'environment';
  id: number;
  graph: string;
  /** Filters applied (seed 002). */
  start?: string;
  end?: string;
  tasks: TaskRecord[];
  /**
   * Environment scope: the plugin each plugin task comes from (task id → plugin name). The
   * records themselves stay in the seed format; the planner needs the plugin to order tasks of
   * equal stage priority by plugin name (seed 000).
   */
  plugins?: Record<string, string>;
}

export interface PingView {
  service: 'config-store';
  subject_prefix: string;
  /** The installation's public key, which clients seal secrets with before they send them (ADR 0023). */
  secrets_public_key?: string;
}

/** A configuration change as the audit keeps it (`audit.list`, newest first). */
export interface AuditEntryView {
  at: string;
  /** The signed identity (NATS), the API token's name (HTTP), or `anonymous` on a NATS without auth. */
  caller: string;
  role: string | null;
  transport: 'nats' | 'http' | string;
  operation: string;
  target: string | null;
  /** `ok`, or the refusal's code. */
  outcome: string;
}
