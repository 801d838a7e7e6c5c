/**
 * The task model: what a deployment task is once it has been read from any of the Fuel
 * formats (deployment_tasks.yaml 1.0.0 / 2.0.0+, legacy tasks.yaml, node role files).
 * Every parser produces these records; the planner consumes nothing else.
 */

export const TASK_TYPES = [
  'stage',
  'group',
  'skipped',
  'puppet',
  'shell',
  'upload_file',
  'sync',
  'copy_files',
  'reboot',
] as const;
export type TaskType = (typeof TASK_TYPES)[number];

/** Types that do work on a host (everything except the graph skeleton). */
export const EXECUTABLE_TASK_TYPES: readonly TaskType[] = [
  'puppet',
  'shell',
  'upload_file',
  'sync',
  'copy_files',
  'reboot',
];

/** One entry of a role list: a role name or a `/regex/` over role names. */
export type RolePattern = { kind: 'name'; name: string } | { kind: 'regex'; source: string };

/**
 * Which nodes a task runs on.
 * - `all`: `'*'`, every node of the deployment, never the master host (`withMaster`: `['*', master]`, both);
 * - `master`: `'master'`, the Granule master host (node uid `master`);
 * - `patterns`: a list (or a single `/regex/`) matched against each node's roles (and tags).
 */
export type RoleSelector =
  { kind: 'all'; withMaster?: true } | { kind: 'master' } | { kind: 'patterns'; patterns: RolePattern[] };

/** The nodes a cross-dependency looks at: a selector, `self` (the same node) or omitted (`any`: as `'*'`). */
export type CrossRole = RoleSelector | { kind: 'self' } | { kind: 'any' };

export interface CrossDependency {
  /** A task id, or a regex source when `isRegex`. */
  name: string;
  isRegex: boolean;
  role: CrossRole;
  /** `all`: every matching instance on every selected node; `any`: the matching instances on one of them. */
  policy: 'all' | 'any';
}

/** `one_by_one` = 1 at a time; `parallel` with `amount` = N at a time; without = unlimited. */
export type Strategy = { type: 'one_by_one' } | { type: 'parallel'; amount?: number };

/**
 * How many nodes of a group may fail before the run is failed.
 * `count` N: N may fail. `percent` P: P% of the group's nodes (rounded down) may fail.
 * With `mustSucceed`, the value (count or percent, rounded up) is how many must succeed instead.
 */
export interface FaultTolerance {
  kind: 'count' | 'percent';
  value: number;
  mustSucceed: boolean;
}

/** The stages with a start/end sync point pair; tasks with a `stage:` sit between them. */
export const STAGES = ['pre_deployment', 'deployment', 'post_deployment'] as const;
export type StageName = (typeof STAGES)[number];

/** `stage: post_deployment/50` → `{ name: 'post_deployment', priority: 50 }` (seed 000). */
export interface StageRef {
  name: StageName;
  /** The postfix; 0 when absent. */
  priority: number;
  /** The text as written, e.g. `pre_deployment/100.0`. */
  raw: string;
}

/** Where a record came from; errors and the plan's `plugin` field use it. */
export interface TaskSource {
  file: string;
  /** 1-based line of the task's first key in `file`. */
  line: number;
  /** Position of the task in its file (0-based); breaks priority ties (seed 000). */
  index: number;
  /** Layer the task belongs to; set when layers are merged. */
  layer?: 'release' | 'plugin' | 'cluster';
  /** Plugin name when the task comes from a plugin. */
  plugin?: string;
}

export interface TaskDefinition {
  id: string;
  type: TaskType;
  /** Task format version (`1.0.0` when absent). */
  version: string;
  /** null for stage tasks and tasks that name no role (they run nowhere unless a group lists them). */
  roles: RoleSelector | null;
  requires: string[];
  requiredFor: string[];
  crossDepends: CrossDependency[];
  crossDependedBy: CrossDependency[];
  /** Expression; a false value keeps the task in the plan as skipped. */
  condition?: string;
  /** Type-specific parameters, as written (strategy removed); secrets may be sealed (`{$sealed}`). */
  parameters: Record<string, unknown>;
  /**
   * Parameter and `env` names marked secret beside the default names (Granule's `sensitive:`
   * list; see `sensitiveParameterPaths`).
   */
  sensitive?: string[];
  /** From `parameters.strategy` or a top-level `strategy`. */
  strategy?: Strategy;
  stage?: StageRef;
  /** Group tasks only. */
  faultTolerance?: FaultTolerance;
  /** Group tasks only: ids of member tasks (node role `tasks: [...]`, Fuel group `tasks`). */
  tasks?: string[];
  /** A failure of this task counts as skipped when false. Default true. */
  failOnError: boolean;
  /** True when the id was generated (legacy tasks.yaml has none). */
  generatedId?: boolean;
  source: TaskSource;
}

/** A node as the planner sees it. */
export interface NodeSpec {
  uid: string;
  name?: string;
  roles: string[];
  tags?: string[];
  labels?: Record<string, string>;
  rack?: string;
}

/** Cluster data conditions are evaluated against. */
export interface ClusterSpec {
  status: 'new' | 'operational' | string;
  settings: Record<string, unknown>;
  /** Every node of the cluster (the deployment's nodes are a subset); defaults to the deployment's nodes. */
  nodes?: NodeSpec[];
  [key: string]: unknown;
}
