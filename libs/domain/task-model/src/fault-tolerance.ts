import { FieldProblem, describeValue } from './task-diagnostics';
import { FaultTolerance } from './types';

const COUNT_RE = /^([+-]?)(\d+)$/;
const PERCENT_RE = /^([+-]?)(\d+(?:\.\d+)?)\s*%$/;

/**
 * Reads a group's `fault_tolerance`: a count (`2`), a percent (`'10%'`), or either negated
 * (`-1`, `'-10%'`), meaning that many nodes must succeed instead. Returns a problem for anything else.
 */
export function readFaultTolerance(raw: unknown): FaultTolerance | FieldProblem {
  const text = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw.trim() : undefined;
  const count = text === undefined ? null : COUNT_RE.exec(text);
  if (count) return { kind: 'count', value: Number(count[2]), mustSucceed: count[1] === '-' };
  const percent = text === undefined ? null : PERCENT_RE.exec(text);
  if (percent) {
    const value = Number(percent[2]);
    if (value > 100)
      return { code: 'TASK_BAD_FIELD', message: `expected a percent between 0% and 100%, got ${describeValue(raw)}` };
    return { kind: 'percent', value, mustSucceed: percent[1] === '-' };
  }
  return {
    code: 'TASK_BAD_FIELD',
    message: `expected a node count like 2, a percent like '10%', or a negative one like -2 or '-10%' (that many must succeed), got ${describeValue(raw)}`,
  };
}

// Guards floor/ceil against binary fractions such as 14.3 * 7 / 100 = 1.0010000000000001.
function tidy(x: number): number {
  return Math.round(x * 1e9) / 1e9;
}

/**
 * How many nodes of a group of `groupSize` may fail. No `fault_tolerance`: `groupSize + 1`, a
 * number no group can exceed, so the group never fails the run on its own (Fuel's
 * `calculate_fault_tolerance` returns the same "unattainable" value). A percent of the group
 * rounds down; with `mustSucceed` the value (a percent rounds up) is how many must succeed, so
 * `groupSize - value` may fail. An explicit value is clamped to [0, groupSize].
 */
export function resolveFaultTolerance(ft: FaultTolerance | undefined, groupSize: number): number {
  if (!ft) return groupSize + 1;
  const share = ft.kind === 'count' ? ft.value : tidy((ft.value * groupSize) / 100);
  const mayFail = ft.mustSucceed ? groupSize - Math.ceil(share) : Math.floor(share);
  return Math.min(groupSize, Math.max(0, mayFail));
}
