import type { Diagnostic } from '@granule/core';
import type { NodeSpec } from '@granule/task-model';
import {
  CRITERIA_KEYS,
  checkAgainstNodes,
  checkDependencies,
  criterionProblem,
  groupPath,
  labelProblem,
  nameProblem,
  reporter,
  type GroupEntry,
} from './strategy-checks';
import type { CriterionName, DeploymentStrategy, SuccessCriteria } from './strategy.types';

const CRITERIA_FIELDS: Record<CriterionName, keyof SuccessCriteria> = {
  percent_successful_nodes: 'percentSuccessfulNodes',
  minimum_successful_nodes: 'minimumSuccessfulNodes',
  maximum_failed_nodes: 'maximumFailedNodes',
};

/**
 * Checks a typed strategy (built in code or read by {@link parseStrategyDocument}) and returns
 * every finding: empty or duplicate group names, bad criteria values, empty success_criteria,
 * bad labels, unknown dependencies, circular dependencies (named in cycle order). With `nodes`,
 * also warns about groups that select no node, `node_names` that name no node and nodes no
 * group selects. Paths read like `groups[1] (compute-nodes-1).success_criteria.maximum_failed_nodes`.
 */
export function validateStrategy(
  strategy: DeploymentStrategy,
  nodes?: readonly NodeSpec[],
  file?: string,
): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  const report = reporter(diagnostics, file);
  if (strategy.groups.length === 0)
    report('error', 'STRATEGY_NO_GROUPS', ['groups'], 'groups', 'expected at least one group, got an empty list');
  const entries: GroupEntry[] = strategy.groups.map((group, index) => {
    const where = groupPath(index, group.name);
    const problem = nameProblem(group.name);
    if (problem) report('error', 'STRATEGY_INVALID_FIELD', ['groups', index, 'name'], `${where}.name`, problem);
    const criteria = group.successCriteria;
    if (criteria) {
      const present = CRITERIA_KEYS.filter((k) => criteria[CRITERIA_FIELDS[k]] !== undefined);
      if (present.length === 0) {
        report(
          'error',
          'STRATEGY_INVALID_FIELD',
          ['groups', index, 'success_criteria'],
          `${where}.success_criteria`,
          `expected at least one of ${CRITERIA_KEYS.join(', ')}, got an empty mapping`,
        );
      }
      for (const key of present) {
        const p = criterionProblem(key, criteria[CRITERIA_FIELDS[key]]);
        if (p)
          report(
            'error',
            'STRATEGY_INVALID_FIELD',
            ['groups', index, 'success_criteria', key],
            `${where}.success_criteria.${key}`,
            p,
          );
      }
    }
    group.selectors.forEach((s, si) =>
      s.nodeLabels.forEach((l, li) => {
        if (l.key.trim() === '' || l.value.trim() === '' || l.key.includes(':') || l.value.includes(':')) {
          report(
            'error',
            'STRATEGY_INVALID_LABEL',
            ['groups', index, 'selectors', si, 'node_labels', li],
            `${where}.selectors[${si}].node_labels[${li}]`,
            labelProblem(JSON.stringify(`${l.key}:${l.value}`)),
          );
        }
      }),
    );
    return { index, group, named: problem === undefined };
  });
  checkDependencies(entries, report);
  if (nodes) checkAgainstNodes(entries, nodes, report);
  return diagnostics;
}
