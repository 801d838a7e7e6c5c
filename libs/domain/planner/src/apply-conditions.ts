import type { Diagnostic } from '@granule/core';
import { compileCondition, evaluateCondition, referencesNode } from '@granule/conditions';
import type { ConditionContext } from '@granule/conditions';
import type { ClusterSpec, NodeSpec, TaskDefinition } from '@granule/task-model';
import type { InstanceGraph } from './instance-graph';
import type { SkipReason } from './plan-types';
import { taskDiagnostic } from './planner-errors';

/**
 * Marks the instances of tasks whose condition is false as skipped (their edges stay).
 * `nodes` are indexed like the graph's nodes; `deploymentNodes` are what `api.` functions see.
 * A condition is compiled once and evaluated once per task, or once per node when it reads
 * `node:`. Bad conditions become diagnostics naming the task.
 */
export function applyConditions(
  graph: InstanceGraph,
  tasks: TaskDefinition[],
  nodes: NodeSpec[],
  deploymentNodes: NodeSpec[],
  cluster: ClusterSpec | undefined,
  skipped: (SkipReason | undefined)[],
  diags: Diagnostic[],
): void {
  const base: ConditionContext = {
    cluster: { ...(cluster ?? {}), status: cluster?.status ?? 'new', settings: cluster?.settings ?? {} },
    nodes: deploymentNodes,
    clusterNodes: cluster?.nodes ?? deploymentNodes,
  };
  const verdicts = new Map<number, boolean | ((node: NodeSpec) => boolean)>();
  tasks.forEach((task, t) => {
    if (task.condition === undefined) return;
    try {
      const compiled = compileCondition(task.condition);
      verdicts.set(
        t,
        referencesNode(compiled)
          ? (node: NodeSpec) => evaluateCondition(compiled, { ...base, node })
          : evaluateCondition(compiled, base),
      );
    } catch (err) {
      diags.push(
        taskDiagnostic(
          task,
          'PLAN_CONDITION',
          `condition ${JSON.stringify(task.condition)}: ${(err as Error).message}`,
        ),
      );
    }
  });
  if (verdicts.size === 0) return;
  const reported = new Set<number>();
  for (let i = 0; i < graph.size; i++) {
    const verdict = graph.kind[i] === 'task' ? verdicts.get(graph.task[i]) : undefined;
    if (verdict === undefined || skipped[i]) continue;
    try {
      const ok = typeof verdict === 'boolean' ? verdict : verdict(nodes[graph.node[i]]);
      if (!ok) skipped[i] = 'condition';
    } catch (err) {
      const t = graph.task[i];
      if (!reported.has(t))
        diags.push(
          taskDiagnostic(
            tasks[t],
            'PLAN_CONDITION',
            `condition ${JSON.stringify(tasks[t].condition)}: ${(err as Error).message}`,
          ),
        );
      reported.add(t);
    }
  }
}
