/**
 * A deployment strategy (Airship's DeploymentStrategy, seed 004): named groups of nodes,
 * deployed one group at a time in dependency order, each judged by its success criteria.
 * All records are plain data (JSON-serialisable), so they can travel in events.
 */

/** The `schema` of the Airship envelope. */
export const DEPLOYMENT_STRATEGY_SCHEMA = 'shipyard/DeploymentStrategy/v1';

/** A `node_labels` entry: `"key:value"` or `- key: value` in the document. */
export interface LabelSelector {
  key: string;
  value: string;
}

/**
 * One selector. Within a field any listed value matches; across the non-empty fields of one
 * selector all must match. A selector whose fields are all empty selects every node.
 */
export interface GroupSelector {
  /** Matches a node's `name` or its `uid`. */
  nodeNames: string[];
  nodeTags: string[];
  nodeLabels: LabelSelector[];
  rackNames: string[];
}

/** Each criterion is checked on its own after prepare and after deploy; any failing fails the group. */
export interface SuccessCriteria {
  /** Integer 0-100: successes / group nodes x 100 must be at least this (no rounding). */
  percentSuccessfulNodes?: number;
  /** Integer >= 0: at least this many of the group's nodes must have succeeded. */
  minimumSuccessfulNodes?: number;
  /** Integer >= 0: at most this many of the group's nodes may have failed. */
  maximumFailedNodes?: number;
}

export interface DeploymentGroup {
  name: string;
  /** A failed critical group fails the run (after every eligible group has been processed). */
  critical: boolean;
  /** Groups that must be DEPLOYED before this one is processed. */
  dependsOn: string[];
  /** United; an empty list selects every node. */
  selectors: GroupSelector[];
  /** Absent: no check, the group succeeds whatever its nodes did. */
  successCriteria?: SuccessCriteria;
}

export interface DeploymentStrategy {
  /** `metadata.name` of the document, when it has one. */
  name?: string;
  groups: DeploymentGroup[];
}

/** The document keys of the criteria; used in failures and messages. */
export type CriterionName = 'percent_successful_nodes' | 'minimum_successful_nodes' | 'maximum_failed_nodes';

/**
 * Why a group failed.
 * - a criterion: `{criteria: 'minimum_successful_nodes', needed: 3, actual: 2}`;
 *   for `percent_successful_nodes`, `actual` is the percentage rounded to 2 decimals
 *   (the check itself is exact);
 * - a dependency: `{criteria: 'depends_on', needed: 'control-nodes', actual: 'FAILED'}`,
 *   one entry per failed dependency.
 */
export type GroupFailure =
  | { criteria: CriterionName; needed: number; actual: number }
  | { criteria: 'depends_on'; needed: string; actual: 'FAILED' };

/** NOT_STARTED → PREPARED → DEPLOYED, or FAILED from any of the first two. */
export type GroupStatus = 'NOT_STARTED' | 'PREPARED' | 'DEPLOYED' | 'FAILED';

/** One status per node per run (seed 004: not started | prepared | success | failure). */
export type NodeStatus = 'not_started' | 'prepared' | 'deployed' | 'failed';

/** The two phases of a group: prepare runs the provisioning graph, deploy the default graph. */
export type StrategyPhase = 'prepare' | 'deploy';

/**
 * `success`: every group DEPLOYED and no node failed; `partial`: some non-critical group or
 * some node failed; `failed`: a critical group failed (itself or through a dependency).
 */
export type StrategyOutcome = 'success' | 'partial' | 'failed';
