import { INPUT_LIMITS, overLimitMessage } from '@granule/core';
import type { Diagnostic } from '@granule/core';
import { MASTER_NODE_UID, compileRoleSelector } from './role-selector';
import type { NodeSpec, TaskDefinition } from './types';

/**
 * How many task instances (a task on a node) planning these tasks on these nodes makes, counted
 * without building the plan: nodes that a selector cannot tell apart (same roles and tags) are
 * matched once per kind. Tasks without a selector (stages, sync points) count once.
 */
export function countPlanInstances(tasks: readonly TaskDefinition[], nodes: readonly NodeSpec[]): number {
  const kinds = new Map<string, { node: NodeSpec; count: number }>();
  for (const node of nodes) {
    const key = JSON.stringify([node.uid === MASTER_NODE_UID, [...node.roles].sort(), [...(node.tags ?? [])].sort()]);
    const kind = kinds.get(key);
    if (kind) kind.count++;
    else kinds.set(key, { node, count: 1 });
  }
  let total = 0;
  for (const task of tasks) {
    if (!task.roles) {
      total++;
      continue;
    }
    const matches = compileRoleSelector(task.roles);
    for (const { node, count } of kinds.values()) if (matches(node)) total += count;
  }
  return total;
}

/**
 * The plan bounds of INPUT_LIMITS (nodes of a plan, task instances of a plan), checked before
 * planning so a plan too big to hold or store is refused with the bound and the size.
 */
export function planSizeProblems(tasks: readonly TaskDefinition[], nodes: readonly NodeSpec[]): Diagnostic[] {
  if (nodes.length > INPUT_LIMITS.planNodes)
    return [
      {
        severity: 'error',
        code: 'PLAN_TOO_LARGE',
        path: 'nodes',
        message: overLimitMessage(INPUT_LIMITS.planNodes, nodes.length, 'nodes'),
      },
    ];
  const instances = countPlanInstances(tasks, nodes);
  if (instances > INPUT_LIMITS.planInstances)
    return [
      {
        severity: 'error',
        code: 'PLAN_TOO_LARGE',
        message: `the plan would have too many task instances (a task on a node): ${overLimitMessage(INPUT_LIMITS.planInstances, instances, 'instances')}`,
      },
    ];
  return [];
}
