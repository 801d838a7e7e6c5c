import { GranuleError } from '@granule/core';

/** No stored plan has this id. */
export class PlanNotFoundError extends GranuleError<'PLAN_NOT_FOUND'> {
  constructor(readonly planId: string) {
    super('PLAN_NOT_FOUND', `plan '${planId}' not found in the plan store`);
  }
}
