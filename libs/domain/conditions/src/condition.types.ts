import type { NodeSpec } from '@granule/task-model';

/** Data a condition is evaluated against. */
export interface ConditionContext {
  /** Read by `cluster:<path>` and `api.cluster_status`; `settings` is read by `settings:<path>`. */
  cluster: { status: string; settings: Record<string, unknown>; [key: string]: unknown };
  /** Nodes in this deployment: `api.role_in_deployment()`, `api.nodes_count()`. */
  nodes: NodeSpec[];
  /**
   * Every node of the cluster, for `api.role_in_cluster()`. Defaults to `cluster.nodes` when that
   * is an array, else to `nodes`.
   */
  clusterNodes?: NodeSpec[];
  /** The node the task instance is for, when evaluated per node; read by `node:<path>`. */
  node?: NodeSpec;
  /** Read by `release:<path>`. */
  release?: Record<string, unknown>;
}

/** A value an expression can produce: JSON-like data (objects come from the context). */
export type ConditionValue =
  null | boolean | number | string | readonly ConditionValue[] | { readonly [key: string]: unknown };

/** Namespaces a reference (`<namespace>:<path>`) can read. */
export type ConditionNamespace = 'cluster' | 'settings' | 'release' | 'node';

export type ComparisonOperator = '==' | '!=' | '<' | '<=' | '>' | '>=' | 'in' | 'not in';

/** Members of the `api` object. */
export type ApiMember = 'cluster_status' | 'role_in_deployment' | 'role_in_cluster' | 'nodes_count';

/** Parsed expression. `column` is 1-based in the source. */
export type ConditionAst =
  | { kind: 'literal'; column: number; value: null | boolean | number | string }
  | { kind: 'list'; column: number; items: ConditionAst[] }
  | { kind: 'reference'; column: number; namespace: ConditionNamespace; path: string[] }
  | { kind: 'api'; column: number; member: ApiMember; args: ConditionAst[] }
  | { kind: 'not'; column: number; operand: ConditionAst }
  | { kind: 'negate'; column: number; operand: ConditionAst }
  | { kind: 'and' | 'or'; column: number; left: ConditionAst; right: ConditionAst }
  | { kind: 'compare'; column: number; operator: ComparisonOperator; left: ConditionAst; right: ConditionAst };
