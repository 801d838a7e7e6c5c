import { Diagnostic, GranuleError, InvalidInputError } from '@granule/core';
import type { TaskDefinition } from '@granule/task-model';

export type PlannerErrorCode =
  | 'PLAN_UNKNOWN_TASK'
  | 'PLAN_CYCLE'
  | 'PLAN_UNKNOWN_FILTER_TASK'
  | 'PLAN_UNKNOWN_NODE'
  | 'PLAN_DUPLICATE_TASK'
  | 'PLAN_CONDITION'
  | 'PLAN_UNKNOWN_GRAPH';

/** A diagnostic about one task, located at the task's file and line. */
export function taskDiagnostic(task: TaskDefinition, code: PlannerErrorCode, message: string): Diagnostic {
  return {
    severity: 'error',
    code,
    message,
    file: task.source.file,
    line: task.source.line || undefined,
    taskId: task.id,
  };
}

/** A plan that cannot be built; `diagnostics` holds every reason found. */
export class PlanError extends InvalidInputError {
  constructor(diagnostics: Diagnostic[]) {
    super(diagnostics);
    this.name = 'PlanError';
  }
}

export class PlanCycleError extends GranuleError<'PLAN_CYCLE'> {
  constructor(readonly cycle: string[]) {
    super('PLAN_CYCLE', `dependency cycle (each runs before the next): ${cycle.join(' -> ')}`);
  }
}

/**
 * A cycle as a finding that names where its tasks are written: the first task's file and line,
 * then each instance with its line (and its file when it is another one):
 * `tasks.yaml:3: dependency cycle (each runs before the next): a@n1 (line 3) -> b@n1 (line 7) -> a@n1`.
 * Synthetic instances (`G:start@sync`, barriers) are located at the task they belong to.
 */
export function cycleDiagnostic(cycle: readonly string[], tasks: readonly TaskDefinition[]): Diagnostic {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const taskOf = (instance: string): TaskDefinition | undefined => {
    const id = instance.slice(0, instance.lastIndexOf('@'));
    return byId.get(id) ?? byId.get(id.split(':')[0]);
  };
  const first = cycle.map(taskOf).find((t) => t?.source.file);
  const d: Diagnostic = { severity: 'error', code: 'PLAN_CYCLE', message: '' };
  if (first) {
    d.file = first.source.file;
    if (first.source.line) d.line = first.source.line;
  }
  const where = (t: TaskDefinition | undefined): string => {
    if (!t?.source.file) return '';
    const line = t.source.line ? `${t.source.file === d.file ? 'line ' : ':'}${t.source.line}` : '';
    return ` (${t.source.file === d.file ? line : `${t.source.file}${line}`})`.replace(' ()', '');
  };
  const steps = cycle.map((instance, i) =>
    i === cycle.length - 1 ? instance : `${instance}${where(taskOf(instance))}`,
  );
  d.message = `dependency cycle (each runs before the next): ${steps.join(' -> ')}`;
  return d;
}
