import { GranuleError } from '@granule/core';

export type StrategyRunErrorCode = 'STRATEGY_UNEXPECTED_RESULT' | 'STRATEGY_RUN_FINISHED';

/**
 * A result handed to `applyResult` that does not fit the run: wrong group or phase, nodes
 * that were not part of the action, a node both succeeded and failed, or a finished run.
 * It is a driver bug, not bad user input.
 */
export class StrategyRunError extends GranuleError<StrategyRunErrorCode> {
  constructor(code: StrategyRunErrorCode, message: string) {
    super(code, message);
  }
}
