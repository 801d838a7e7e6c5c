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
