import {
  ArrayUnique,
  IsArray,
  IsBoolean,
  IsIn,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  MaxLength,
} from 'class-validator';
import { ENVIRONMENT_STATUSES, NAME_RE, NODE_STATUSES } from '@granule/config-model';
import type { EnvironmentStatus, NodeStatus } from '@granule/config-model';
import { TASK_SCOPES } from '../config-store/config-store.api';
import type { TaskScope } from '../config-store/config-store.api';

// Request payloads of the config-store API (NATS `<prefix>.config.<operation>`, and HTTP).
// Field names are snake_case on the wire, as in Fuel's API and the CLI's JSON output.

const NAME_MESSAGE = 'must be a name of letters, digits, _ . - (up to 63 characters, starting with a letter or digit)';
const ROLE_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
const ROLE_MESSAGE = 'each entry must be a role name of letters, digits, _ . -';

/** A request without fields (`*.list`, `ping`). */
export class EmptyRequest {}

/** A release, plugin or environment by numeric id or by name. */
export class RefRequest {
  @IsString()
  @IsNotEmpty()
  id!: string;
}

/** `plugin.install` / `release.install`: the plugin's files, read by the caller from a folder or package. */
export class InstallPluginRequest {
  /** The folder or package the files were read from (for messages). */
  @IsString()
  @IsNotEmpty()
  source!: string;

  /** Relative path → UTF-8 content; a path ending in `/` is a directory. */
  @IsObject()
  files!: Record<string, string>;

  /**
   * Absolute path of the plugin's deployment scripts as the nodes see it: relative manifests,
   * sync sources and shell working directories of its tasks are anchored there.
   */
  @IsOptional()
  @Matches(/^\//, { message: 'scriptsDir must be an absolute path' })
  scriptsDir?: string;
}

export class CreateEnvironmentRequest {
  @Matches(NAME_RE, { message: NAME_MESSAGE })
  name!: string;

  /** Release id or name; may be omitted when exactly one release is installed. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  release?: string;

  @IsOptional()
  @IsObject()
  settings?: Record<string, unknown>;

  /** Plugin ids or names to enable at once. */
  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  @ArrayUnique({ message: 'must not name a plugin twice' })
  plugins?: string[];
}

export class UpdateEnvironmentRequest {
  @IsString()
  @IsNotEmpty()
  id!: string;

  @IsOptional()
  @Matches(NAME_RE, { message: NAME_MESSAGE })
  name?: string;

  @IsOptional()
  @IsIn(ENVIRONMENT_STATUSES)
  status?: EnvironmentStatus;

  /** Replaces the settings. */
  @IsOptional()
  @IsObject()
  settings?: Record<string, unknown>;

  /** Dotted path → value (`null` removes), applied after `settings`. */
  @IsOptional()
  @IsObject()
  settings_patch?: Record<string, unknown>;
}

/** `env.plugin.enable` / `env.plugin.disable`. */
export class EnvironmentPluginRequest {
  @IsString()
  @IsNotEmpty()
  environment!: string;

  @IsString()
  @IsNotEmpty()
  plugin!: string;
}

export class AddNodeRequest {
  @IsString()
  @Matches(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/, {
    message: 'must be letters, digits, _ . : - (up to 128 characters)',
  })
  uid!: string;

  @IsString()
  @IsNotEmpty()
  @MaxLength(253)
  hostname!: string;

  @IsOptional()
  @IsString()
  @IsNotEmpty()
  address?: string;

  @IsOptional()
  @IsArray()
  @Matches(ROLE_RE, { each: true, message: ROLE_MESSAGE })
  roles?: string[];

  @IsOptional()
  @IsArray()
  @Matches(ROLE_RE, { each: true, message: ROLE_MESSAGE })
  tags?: string[];

  @IsOptional()
  @IsObject()
  labels?: Record<string, string>;

  @IsOptional()
  @IsString()
  @IsNotEmpty()
  rack?: string;

  @IsOptional()
  @IsIn(NODE_STATUSES)
  status?: NodeStatus;

  /** Environment id or name. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  environment?: string;
}

export class ListNodesRequest {
  /** Only the nodes of this environment (id or name). */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  environment?: string;
}

export class NodeRefRequest {
  @IsString()
  @IsNotEmpty()
  uid!: string;
}

export class UpdateNodeRequest {
  @IsString()
  @IsNotEmpty()
  uid!: string;

  @IsOptional()
  @IsString()
  @IsNotEmpty()
  hostname?: string;

  @IsOptional()
  @IsString()
  @IsNotEmpty()
  address?: string;

  @IsOptional()
  @IsIn(NODE_STATUSES)
  status?: NodeStatus;

  @IsOptional()
  @IsArray()
  @Matches(ROLE_RE, { each: true, message: ROLE_MESSAGE })
  add_tags?: string[];

  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  remove_tags?: string[];

  /** Key → value; a `null` value removes the label. */
  @IsOptional()
  @IsObject()
  labels?: Record<string, string | null>;

  /** A rack name, or `null` to clear it. */
  @IsOptional()
  @IsString()
  rack?: string | null;
}

/** Puts a node in an environment with pending roles (they become roles when deployed). */
export class AssignNodeRequest {
  @IsString()
  @IsNotEmpty()
  uid!: string;

  @IsString()
  @IsNotEmpty()
  environment!: string;

  @IsArray()
  @ArrayUnique({ message: 'must not list a role twice' })
  @Matches(ROLE_RE, { each: true, message: ROLE_MESSAGE })
  roles!: string[];
}

export class GetTasksRequest {
  @IsIn(TASK_SCOPES)
  scope!: TaskScope;

  @IsString()
  @IsNotEmpty()
  id!: string;

  /** Graph type; default `default`. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  graph?: string;

  /** Keep this task and everything after it. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  start?: string;

  /** Keep this task and everything it needs. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  end?: string;
}

export class PutTasksRequest {
  @IsIn(TASK_SCOPES)
  scope!: TaskScope;

  @IsString()
  @IsNotEmpty()
  id!: string;

  /** Releases only: graph type; default `default`. An environment's overrides are for `default`. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  graph?: string;

  /** Task records in deployment_tasks format. */
  @IsArray()
  tasks!: unknown[];
}

export class UploadStrategyRequest {
  /** Default: the document's `metadata.name`. */
  @IsOptional()
  @Matches(NAME_RE, { message: NAME_MESSAGE })
  name?: string;

  /** The strategy document as YAML (or JSON) text (seed 004). */
  @IsString()
  @IsNotEmpty()
  document!: string;

  /** The file it came from, for messages. */
  @IsOptional()
  @IsString()
  file?: string;

  /** Replace a strategy of the same name. */
  @IsOptional()
  @IsBoolean()
  replace?: boolean;
}

export class StrategyRefRequest {
  @IsString()
  @IsNotEmpty()
  name!: string;
}
