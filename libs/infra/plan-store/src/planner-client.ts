import type { NatsConnection } from '@nats-io/transport-node';
import { executionSubjects } from '@granule/contracts';
import type { PlannedMessage, PlanReplyMessage, PlanRequestMessage } from '@granule/contracts';
import { request, SERVICES, toReplyError } from '@granule/messaging';
import { ServiceUnavailableError } from '@granule/messaging';

/** Default time to wait for a plan: a 10,000-node plan takes about 10 s to build and store. */
export const DEFAULT_PLAN_TIMEOUT_MS = 120_000;

/**
 * Asks graph-planner for a plan on `<prefix>.planner.plan`. Resolves with the reply envelope, a
 * refusal included: a bad input is an answer, not an exception. Throws messaging's
 * `ServiceUnavailableError` when no replica listens (`PLANNER_UNAVAILABLE`), none answers
 * within `timeoutMs` (`PLANNER_TIMEOUT`) or the answer is not an envelope (`PLANNER_BAD_REPLY`).
 */
export async function requestPlan(
  nc: NatsConnection,
  prefix: string,
  message: PlanRequestMessage,
  timeoutMs = DEFAULT_PLAN_TIMEOUT_MS,
): Promise<PlanReplyMessage> {
  try {
    const result = await request<PlannedMessage>(
      nc,
      SERVICES.planner,
      executionSubjects(prefix).planner.plan,
      message,
      {
        timeoutMs,
      },
    );
    return { ok: true, result };
  } catch (err) {
    if (err instanceof ServiceUnavailableError) throw err;
    return { ok: false, error: toReplyError(err) };
  }
}
