import type { ClusterSpec, NodeSpec, StageName, Strategy, TaskDefinition, TaskType } from '@granule/task-model';

/** The virtual node that carries stage, group and barrier sync points (they do no work on a host). */
export const SYNC_NODE = 'sync';
/** The Granule master host; tasks with `roles: master` run there. */
export const MASTER_NODE = 'master';

/** Subgraph selection, as in seed 002's CLI. */
export interface PlanFilters {
  /** Keep this task and everything after it. */
  start?: string;
  /** Keep this task and everything it needs. */
  end?: string;
  /** These tasks stay in the plan as skipped (edges kept). */
  skip?: string[];
  /** Every other task stays in the plan as skipped (edges kept). */
  only?: string[];
  /** Plan only these node uids (as if the others were not part of the deployment). */
  nodes?: string[];
}

export interface PlanRequest {
  /** Already merged tasks (see `mergeTaskLayers`). */
  tasks: TaskDefinition[];
  nodes: NodeSpec[];
  cluster?: ClusterSpec;
  filters?: PlanFilters;
}

/** What kind of plan entry an instance is. */
export type InstanceKind =
  | 'task' // a task on a real node
  | 'stage' // a stage sync point (on `sync`)
  | 'group' // group G done on one node
  | 'group-start' // group G may start (on `sync`)
  | 'group-end' // group G done on every node (on `sync`)
  | 'barrier'; // a join point that replaces many-to-many edges (on `sync`)

export type SkipReason = 'condition' | 'filter' | 'type';

/** One task on one node, as printed by `granule plan -o json`. */
export interface PlanInstance {
  task: string;
  node: string;
  type: TaskType;
  stage: StageName;
  priority: number;
  /** Direct predecessors, `task@node`. */
  requires: string[];
  /** Each inner list: at least one of them must be done (cross-depends with `policy: any`). */
  requires_any?: string[][];
  parameters: Record<string, unknown>;
  skipped: boolean;
  skip_reason?: SkipReason;
  /** Present (false) only for tasks whose failure counts as skipped. */
  fail_on_error?: false;
  plugin?: string;
}

/** A fault-tolerance group: a group task and the nodes it covers. */
export interface PlanGroup {
  id: string;
  nodes: string[];
  /** How many of `nodes` may fail before the run must stop. */
  faultTolerance: number;
  strategy?: Strategy;
}

/**
 * The compiled plan: instances in compact arrays (a 10,000-node plan has about a million),
 * plus the data the orchestrator needs beside the edges. Use `planInstances` / `instanceAt`
 * to get printable records.
 */
export interface Plan {
  /** Node uids by index; the last entry is `sync`. */
  nodeNames: string[];
  /** Tasks by index (the merged input, after the standard stages were added). */
  tasks: TaskDefinition[];
  /** Per instance: task index, or -1 for synthetic sync points (name in `syntheticNames`). */
  instTask: Int32Array;
  /** Per instance: node index into `nodeNames`. */
  instNode: Int32Array;
  instKind: InstanceKind[];
  /** Names of synthetic instances (group start/end, barriers) by instance index. */
  syntheticNames: Map<number, string>;
  preds: number[][];
  /** Any-of predecessor groups by instance index. */
  anyPreds: Map<number, number[][]>;
  skipped: (SkipReason | undefined)[];
  stage: StageName[];
  priority: Int32Array;
  /** Instance indices sorted by priority (a valid execution order). */
  order: Int32Array;
  groups: PlanGroup[];
  /** Task id → how many nodes may run it at once (from task strategies). */
  concurrency: Record<string, number>;
}
