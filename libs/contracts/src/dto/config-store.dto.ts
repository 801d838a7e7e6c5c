import {
  ArrayUnique,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateBy,
  isISO8601,
} from 'class-validator';
import type { ValidationOptions } from 'class-validator';
import { INPUT_LIMITS } from '@granule/core';
import { ENVIRONMENT_STATUSES, NODE_STATUSES } from '@granule/config-model';
import type { EnvironmentStatus, NodeStatus } from '@granule/config-model';
import { TASK_SCOPES } from '../config-store/config-store.api';
import type { TaskScope } from '../config-store/config-store.api';
import { IsIdentifier, MaxBytes, MaxItems, MaxJsonBytes, Optional } from './bounds';

// Request payloads of the config-store API (NATS `<prefix>.config.<operation>`, and HTTP).
// Field names are snake_case on the wire, as in Fuel's API and the CLI's JSON output.

const FIELD = INPUT_LIMITS.fieldBytes;
const ROLE_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
const ROLE_MESSAGE = 'each entry must be a role name of letters, digits, _ . -';

/** A request without fields (`*.list`, `ping`). */
export class EmptyRequest {}

/** A release, plugin or environment by numeric id or by name. */
export class RefRequest {
  @IsString()
  @IsNotEmpty()
  @MaxBytes(FIELD)
  id!: string;
}

/** `plugin.install` / `release.install`: the plugin's files, read by the caller from a folder or package. */
export class InstallPluginRequest {
  /** The folder or package the files were read from (for messages). */
  @IsString()
  @IsNotEmpty()
  @MaxBytes(4096)
  source!: string;

  /** Relative path → UTF-8 content; a path ending in `/` is a directory. */
  @IsObject()
  files!: Record<string, string>;

  /**
   * SHA-256 (hex) of the plugin's deployment files, packed as a deterministic tar and stored
   * first in the artifacts bucket (ADR 0026). Tasks whose paths are relative to the package
   * name it, and agents fetch it by this digest. Absent: the plugin has no deployment files.
   */
  @Optional()
  @Matches(/^[0-9a-f]{64}$/, { message: 'artifact_digest must be a SHA-256 in 64 lowercase hex digits' })
  artifact_digest?: string;

  /** Size in bytes of the stored artifact (with `artifact_digest`). */
  @Optional()
  @IsInt()
  @Min(0)
  artifact_size?: number;
}

export class CreateEnvironmentRequest {
  @IsIdentifier('environmentName')
  name!: string;

  /** Release id or name; may be omitted when exactly one release is installed. */
  @Optional()
  @IsString()
  @IsNotEmpty()
  @MaxBytes(FIELD)
  release?: string;

  @Optional()
  @IsObject()
  @MaxJsonBytes(INPUT_LIMITS.settingsJsonBytes)
  settings?: Record<string, unknown>;

  /** Plugin ids or names to enable at once. */
  @Optional()
  @IsArray()
  @MaxItems(256, 'plugins')
  @IsString({ each: true })
  @ArrayUnique({ message: 'must not name a plugin twice' })
  plugins?: string[];
}

export class UpdateEnvironmentRequest {
  @IsString()
  @IsNotEmpty()
  @MaxBytes(FIELD)
  id!: string;

  @Optional()
  @IsIdentifier('environmentName')
  name?: string;

  @Optional()
  @IsIn(ENVIRONMENT_STATUSES)
  status?: EnvironmentStatus;

  /** Replaces the settings. */
  @Optional()
  @IsObject()
  @MaxJsonBytes(INPUT_LIMITS.settingsJsonBytes)
  settings?: Record<string, unknown>;

  /** Dotted path → value (`null` removes), applied after `settings`. */
  @Optional()
  @IsObject()
  @MaxJsonBytes(INPUT_LIMITS.settingsJsonBytes)
  settings_patch?: Record<string, unknown>;
}

/** `env.plugin.enable` / `env.plugin.disable`. */
export class EnvironmentPluginRequest {
  @IsString()
  @IsNotEmpty()
  @MaxBytes(FIELD)
  environment!: string;

  @IsString()
  @IsNotEmpty()
  @MaxBytes(FIELD)
  plugin!: string;
}

export class AddNodeRequest {
  @IsIdentifier('nodeUid')
  uid!: string;

  @IsString()
  @IsNotEmpty()
  @MaxLength(253)
  hostname!: string;

  @Optional()
  @IsString()
  @IsNotEmpty()
  @MaxBytes(253)
  address?: string;

  @Optional()
  @IsArray()
  @MaxItems(INPUT_LIMITS.tagCount, 'roles')
  @Matches(ROLE_RE, { each: true, message: ROLE_MESSAGE })
  @MaxBytes(253, { each: true })
  roles?: string[];

  @Optional()
  @IsArray()
  @MaxItems(INPUT_LIMITS.tagCount, 'tags')
  @Matches(ROLE_RE, { each: true, message: ROLE_MESSAGE })
  @MaxBytes(253, { each: true })
  tags?: string[];

  @Optional()
  @IsObject()
  @MaxJsonBytes(INPUT_LIMITS.labelsJsonBytes)
  labels?: Record<string, string>;

  @Optional()
  @IsString()
  @IsNotEmpty()
  @MaxBytes(253)
  rack?: string;

  @Optional()
  @IsIn(NODE_STATUSES)
  status?: NodeStatus;

  /** Environment id or name. */
  @Optional()
  @IsString()
  @IsNotEmpty()
  @MaxBytes(FIELD)
  environment?: string;
}

export class ListNodesRequest {
  /** Only the nodes of this environment (id or name). */
  @Optional()
  @IsString()
  @IsNotEmpty()
  @MaxBytes(FIELD)
  environment?: string;
}

export class NodeRefRequest {
  @IsString()
  @IsNotEmpty()
  @MaxBytes(FIELD)
  uid!: string;
}

export class UpdateNodeRequest {
  @IsString()
  @IsNotEmpty()
  @MaxBytes(FIELD)
  uid!: string;

  @Optional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(253)
  hostname?: string;

  @Optional()
  @IsString()
  @IsNotEmpty()
  @MaxBytes(253)
  address?: string;

  @Optional()
  @IsIn(NODE_STATUSES)
  status?: NodeStatus;

  @Optional()
  @IsArray()
  @MaxItems(INPUT_LIMITS.tagCount, 'tags')
  @Matches(ROLE_RE, { each: true, message: ROLE_MESSAGE })
  @MaxBytes(253, { each: true })
  add_tags?: string[];

  @Optional()
  @IsArray()
  @MaxItems(INPUT_LIMITS.tagCount, 'tags')
  @IsString({ each: true })
  @MaxBytes(253, { each: true })
  remove_tags?: string[];

  /** Key → value; a `null` value removes the label. */
  @Optional()
  @IsObject()
  @MaxJsonBytes(INPUT_LIMITS.labelsJsonBytes)
  labels?: Record<string, string | null>;

  /** A rack name, or `null` to clear it. */
  @IsOptional()
  @IsString()
  @MaxBytes(253)
  rack?: string | null;
}

/** Puts a node in an environment with pending roles (they become roles when deployed). */
export class AssignNodeRequest {
  @IsString()
  @IsNotEmpty()
  @MaxBytes(FIELD)
  uid!: string;

  @IsString()
  @IsNotEmpty()
  @MaxBytes(FIELD)
  environment!: string;

  @IsArray()
  @MaxItems(INPUT_LIMITS.tagCount, 'roles')
  @ArrayUnique({ message: 'must not list a role twice' })
  @Matches(ROLE_RE, { each: true, message: ROLE_MESSAGE })
  @MaxBytes(253, { each: true })
  roles!: string[];
}

export class GetTasksRequest {
  @IsIn(TASK_SCOPES)
  scope!: TaskScope;

  @IsString()
  @IsNotEmpty()
  @MaxBytes(FIELD)
  id!: string;

  /** Graph type; default `default`. */
  @Optional()
  @IsString()
  @IsNotEmpty()
  @MaxBytes(253)
  graph?: string;

  /** Keep this task and everything after it. */
  @Optional()
  @IsString()
  @IsNotEmpty()
  @MaxBytes(FIELD)
  start?: string;

  /** Keep this task and everything it needs. */
  @Optional()
  @IsString()
  @IsNotEmpty()
  @MaxBytes(FIELD)
  end?: string;
}

export class PutTasksRequest {
  @IsIn(TASK_SCOPES)
  scope!: TaskScope;

  @IsString()
  @IsNotEmpty()
  @MaxBytes(FIELD)
  id!: string;

  /** Releases only: graph type; default `default`. An environment's overrides are for `default`. */
  @Optional()
  @IsString()
  @IsNotEmpty()
  @MaxBytes(253)
  graph?: string;

  /** Task records in deployment_tasks format. */
  @IsArray()
  @MaxItems(INPUT_LIMITS.tasksPerGraph, 'tasks')
  @MaxJsonBytes(INPUT_LIMITS.graphJsonBytes)
  tasks!: unknown[];
}

export class UploadStrategyRequest {
  /** Default: the document's `metadata.name`. */
  @Optional()
  @IsIdentifier('strategyName')
  name?: string;

  /** The strategy document as YAML (or JSON) text (seed 004). */
  @IsString()
  @IsNotEmpty()
  @MaxBytes(INPUT_LIMITS.strategyDocumentBytes)
  document!: string;

  /** The file it came from, for messages. */
  @Optional()
  @IsString()
  @MaxBytes(4096)
  file?: string;

  /** Replace a strategy of the same name. */
  @Optional()
  @IsBoolean()
  replace?: boolean;
}

export class StrategyRefRequest {
  @IsString()
  @IsNotEmpty()
  @MaxBytes(FIELD)
  name!: string;
}

/** `audit.list`: the newest configuration changes first. */
export class ListAuditRequest {
  @Optional()
  @IsInt()
  @Min(1)
  @Max(1000)
  limit?: number;
}

/** A NATS identity name, as the trust store issues them (it names the identity's inbox). */
const IDENTITY_RE = /^[A-Za-z0-9_-]{1,64}$/;
/** A NATS user public key: `U` and 55 base32 characters. */
const USER_KEY_RE = /^U[A-Z2-7]{55}$/;
/** A time with its date, time of day and zone, so PostgreSQL never guesses the zone. */
const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

const TIMESTAMP_MESSAGE = 'expected an ISO 8601 time with a zone from 1970 to 9999, such as 2026-11-25T10:00:00Z';
/** The times a credential can carry: from 1970 to the end of 9999 (UTC), as JWTs and ISO strings hold them. */
const LATEST_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** An ISO 8601 time with a zone (`2026-11-25T10:00:00Z`), a real date (no 30 February), from 1970 to 9999. */
function IsTimestamp(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isTimestamp',
      validator: {
        validate: (value) =>
          typeof value === 'string' &&
          TIMESTAMP_RE.test(value) &&
          isISO8601(value, { strict: true }) &&
          Date.parse(value) >= 0 &&
          Date.parse(value) <= LATEST_TIME,
        defaultMessage: () => TIMESTAMP_MESSAGE,
      },
    },
    options,
  );
}

/**
 * `credential.record`: a node agent's NATS credential as the trust store issued or revoked it
 * (`granule agent enroll|revoke|record`). Admins only: the record is what `node list` shows.
 */
export class RecordCredentialRequest {
  /** The node the credential is bound to; it need not be in the config-store yet. */
  @IsIdentifier('nodeUid')
  uid!: string;

  /** The identity name (`agent-<uid>`). */
  @Matches(IDENTITY_RE, { message: "expected an identity name of 1 to 64 letters, digits, '_' or '-'" })
  identity!: string;

  /** The credential's public key: one row per key, so recording it again changes nothing. */
  @Matches(USER_KEY_RE, { message: 'expected a NATS user public key (U and 55 characters A-Z, 2-7)' })
  public_key!: string;

  @IsTimestamp()
  issued_at!: string;

  /** None: the credential does not expire. */
  @Optional()
  @IsTimestamp()
  expires_at?: string;

  /** When it was revoked; once recorded, a revocation stays (NATS never takes a revoked key back). */
  @Optional()
  @IsTimestamp()
  revoked_at?: string;
}
