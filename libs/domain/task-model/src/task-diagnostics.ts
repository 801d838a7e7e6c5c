import { GranuleError, quoteFound } from '@granule/core';

/** Stable codes of the diagnostics the task parsers emit. */
export const TASK_DIAGNOSTIC_CODES = [
  'TASK_YAML_SYNTAX',
  'TASK_YAML_WARNING',
  'TASK_FILE_SHAPE',
  'TASK_BAD_RECORD',
  'TASK_MISSING_FIELD',
  'TASK_BAD_FIELD',
  'TASK_DUPLICATE_ID',
  'TASK_UNKNOWN_TYPE',
  'TASK_MISSING_PARAMETER',
  'TASK_BAD_STAGE',
  'TASK_BAD_ROLE_PATTERN',
  'TASK_BAD_NAME_PATTERN',
  'TASK_UNSUPPORTED',
  'TASK_DEPRECATED_ALIAS',
  'TASK_UNKNOWN_FIELD',
  'TASK_IGNORED_FIELD',
] as const;
export type TaskDiagnosticCode = (typeof TASK_DIAGNOSTIC_CODES)[number];

/**
 * Thrown by the single-value parsers (`parseStageRef`, `parseRoleSelector`) when called directly;
 * the file parsers turn the same problems into diagnostics instead.
 */
export class TaskFieldError extends GranuleError<TaskDiagnosticCode> {}

/** A problem found in one value, before it is placed in a file. */
export interface FieldProblem {
  code: TaskDiagnosticCode;
  message: string;
}

/** Renders a value for "expected X, got Y" messages: strings quoted, containers by kind. */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return quoteFound(value);
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Levenshtein distance, for "did you mean" hints on short keys. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}
