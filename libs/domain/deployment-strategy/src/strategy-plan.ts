import { InvalidInputError } from '@granule/core';
import type { NodeSpec } from '@granule/task-model';
import { selectNodes } from './node-selector';
import { validateStrategy } from './strategy-validation';
import type { DeploymentGroup, DeploymentStrategy, SuccessCriteria } from './strategy.types';

/** A group with its nodes resolved. */
export interface PlannedGroup {
  name: string;
  critical: boolean;
  dependsOn: string[];
  successCriteria?: SuccessCriteria;
  /** Every node the selectors pick (node-list order); all of them count in the criteria. */
  nodes: string[];
  /** The nodes this group acts on when every earlier group runs: those no earlier group selects. */
  actionable: string[];
}

/** A strategy resolved against a node list: the groups in processing order. */
export interface StrategyPlan {
  /** Group names in processing order. */
  order: string[];
  /** The groups in processing order. */
  groups: PlannedGroup[];
  /** Every node uid of the deployment, in node-list order (nodes no group selects included). */
  nodes: string[];
}

/**
 * The processing order: dependency generations (0 = no dependencies; otherwise one more than
 * the deepest dependency), and within a generation document order; `critical` plays no part.
 * Deterministic; for the seed's example: monitoring-nodes, ntp-node, control-nodes,
 * compute-nodes-1, compute-nodes-2. Assumes a valid strategy (no cycle, known dependencies).
 */
export function orderGroups(groups: readonly DeploymentGroup[]): DeploymentGroup[] {
  const byName = new Map(groups.map((g) => [g.name, g]));
  const generation = new Map<string, number>();
  const generationOf = (g: DeploymentGroup): number => {
    const known = generation.get(g.name);
    if (known !== undefined) return known;
    const deps = g.dependsOn.map((d) => byName.get(d)).filter((d): d is DeploymentGroup => d !== undefined);
    const value = deps.length === 0 ? 0 : 1 + Math.max(...deps.map(generationOf));
    generation.set(g.name, value);
    return value;
  };
  const index = new Map(groups.map((g, i) => [g.name, i]));
  return [...groups].sort(
    (a, b) => generationOf(a) - generationOf(b) || (index.get(a.name) as number) - (index.get(b.name) as number),
  );
}

/**
 * Resolves each group's nodes and orders the groups. Throws `InvalidInputError` (with every
 * diagnostic) when the strategy is invalid or two nodes share a uid.
 */
export function planStrategy(strategy: DeploymentStrategy, nodes: readonly NodeSpec[]): StrategyPlan {
  const errors = validateStrategy(strategy).filter((d) => d.severity === 'error');
  const seen = new Set<string>();
  for (const node of nodes) {
    if (seen.has(node.uid))
      errors.push({ severity: 'error', code: 'STRATEGY_DUPLICATE_NODE', message: `duplicate node uid '${node.uid}'` });
    seen.add(node.uid);
  }
  if (errors.length > 0) throw new InvalidInputError(errors);

  const taken = new Set<string>();
  const groups = orderGroups(strategy.groups).map((g): PlannedGroup => {
    const selected = selectNodes(g.selectors, nodes);
    const actionable = selected.filter((uid) => !taken.has(uid));
    actionable.forEach((uid) => taken.add(uid));
    return {
      name: g.name,
      critical: g.critical,
      dependsOn: [...g.dependsOn],
      ...(g.successCriteria ? { successCriteria: { ...g.successCriteria } } : {}),
      nodes: selected,
      actionable,
    };
  });
  return { order: groups.map((g) => g.name), groups, nodes: nodes.map((n) => n.uid) };
}

/** Name of the single group of {@link defaultStrategy}. */
export const DEFAULT_GROUP_NAME = 'all-nodes';

/**
 * The strategy used when a deployment has none: one critical group, `all-nodes`, requiring
 * 100% success. It names the given nodes by uid; with no nodes it selects every node.
 */
export function defaultStrategy(nodes: readonly NodeSpec[] = []): DeploymentStrategy {
  const selectors =
    nodes.length === 0 ? [] : [{ nodeNames: nodes.map((n) => n.uid), nodeTags: [], nodeLabels: [], rackNames: [] }];
  return {
    name: 'default',
    groups: [
      {
        name: DEFAULT_GROUP_NAME,
        critical: true,
        dependsOn: [],
        selectors,
        successCriteria: { percentSuccessfulNodes: 100 },
      },
    ],
  };
}
