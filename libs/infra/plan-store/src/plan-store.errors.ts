import { GranuleError } from '@granule/core';

/** No stored plan has this id. */
export class PlanNotFoundError extends GranuleError<'PLAN_NOT_FOUND'> {
  constructor(readonly planId: string) {
    super('PLAN_NOT_FOUND', `plan '${planId}' not found in the plan store`);
  }
}

/** A stored plan's bytes are not what `encodePlan` writes (says which line and what was found). */
export class PlanDocumentInvalidError extends GranuleError<'PLAN_DOCUMENT_INVALID'> {
  constructor(message: string) {
    super('PLAN_DOCUMENT_INVALID', message);
  }
}

/** A page of a plan asked from past its end (`decodePlanRange`). */
export class PlanRangeError extends GranuleError<'PLAN_RANGE_INVALID'> {
  constructor(
    readonly from: number,
    readonly total: number,
  ) {
    super('PLAN_RANGE_INVALID', `the plan has ${total} instance${total === 1 ? '' : 's'}: no page starts at ${from}`);
  }
}
