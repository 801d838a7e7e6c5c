import { GranuleError } from '@granule/core';

/**
 * The condition text is not a valid expression (bad token, unknown namespace or api member,
 * wrong argument count). `column` is 1-based in `source`; the message already names it.
 */
export class ConditionSyntaxError extends GranuleError<'CONDITION_SYNTAX'> {
  constructor(
    message: string,
    readonly source: string,
    readonly column: number,
  ) {
    super('CONDITION_SYNTAX', message);
  }
}

/**
 * A valid condition failed while being evaluated against a context, e.g. `>` between a
 * string and a number. `column` is the 1-based position of the failing operator or call.
 */
export class ConditionEvaluationError extends GranuleError<'CONDITION_EVALUATION'> {
  constructor(
    message: string,
    readonly source: string,
    readonly column: number,
  ) {
    super('CONDITION_EVALUATION', message);
  }
}
