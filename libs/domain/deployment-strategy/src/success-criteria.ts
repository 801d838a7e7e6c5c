import type { GroupFailure, SuccessCriteria } from './strategy.types';

/** How a group's nodes stand after a phase. */
export interface NodeTally {
  /** Every node the group selects (acted on by this group or an earlier one). */
  total: number;
  succeeded: number;
  failed: number;
}

/**
 * Checks each criterion on its own and returns one failure per criterion not met (empty:
 * the group passes). No criteria: always passes. A group with no nodes counts as 100%
 * successful, so only `minimum_successful_nodes` > 0 can fail it. The percentage check is
 * exact (3 of 4 = 75 meets 75, not 76); `actual` is rounded to 2 decimals for reading.
 */
export function evaluateCriteria(criteria: SuccessCriteria | undefined, tally: NodeTally): GroupFailure[] {
  const failures: GroupFailure[] = [];
  if (!criteria) return failures;
  const { percentSuccessfulNodes: percent, minimumSuccessfulNodes: minimum, maximumFailedNodes: maximum } = criteria;
  if (percent !== undefined && tally.total > 0 && tally.succeeded * 100 < percent * tally.total) {
    failures.push({
      criteria: 'percent_successful_nodes',
      needed: percent,
      actual: Math.round((tally.succeeded * 10000) / tally.total) / 100,
    });
  }
  if (minimum !== undefined && tally.succeeded < minimum) {
    failures.push({ criteria: 'minimum_successful_nodes', needed: minimum, actual: tally.succeeded });
  }
  if (maximum !== undefined && tally.failed > maximum) {
    failures.push({ criteria: 'maximum_failed_nodes', needed: maximum, actual: tally.failed });
  }
  return failures;
}
