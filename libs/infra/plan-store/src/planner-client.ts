import { errors, type NatsConnection } from '@nats-io/transport-node';
import { GranuleError } from '@granule/core';
import { executionSubjects } from '@granule/contracts';
import type { PlanReplyMessage, PlanRequestMessage } from '@granule/contracts';

export type PlannerClientErrorCode = 'PLANNER_UNAVAILABLE' | 'PLANNER_TIMEOUT' | 'PLANNER_BAD_REPLY';

/** graph-planner could not be asked: nobody listens, it did not answer in time, or it answered nonsense. */
export class PlannerClientError extends GranuleError<PlannerClientErrorCode> {
  constructor(code: PlannerClientErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** Default time to wait for a plan: a 10,000-node plan takes about 10 s to build and store. */
export const DEFAULT_PLAN_TIMEOUT_MS = 120_000;

/**
 * Asks graph-planner for a plan on `<prefix>.planner.plan` (core NATS request/reply, plain JSON
 * both ways). Resolves with the reply, `{ok: false, code, message}` included: a bad input is an
 * answer, not an exception. Throws `PlannerClientError` when no replica listens
 * (`PLANNER_UNAVAILABLE`), none answers within `timeoutMs` (`PLANNER_TIMEOUT`) or the reply is
 * not a plan reply (`PLANNER_BAD_REPLY`).
 */
export async function requestPlan(
  nc: NatsConnection,
  prefix: string,
  request: PlanRequestMessage,
  timeoutMs = DEFAULT_PLAN_TIMEOUT_MS,
): Promise<PlanReplyMessage> {
  const subject = executionSubjects(prefix).planner.plan;
  let data: string;
  try {
    const msg = await nc.request(subject, JSON.stringify(request), { timeout: timeoutMs });
    data = msg.string();
  } catch (err) {
    if (err instanceof errors.RequestError && err.isNoResponders()) {
      throw new PlannerClientError(
        'PLANNER_UNAVAILABLE',
        `graph-planner did not answer on ${subject}: start it with npm run start:graph-planner`,
        { cause: err },
      );
    }
    if (err instanceof errors.TimeoutError || (err instanceof Error && err.cause instanceof errors.TimeoutError)) {
      throw new PlannerClientError(
        'PLANNER_TIMEOUT',
        `graph-planner did not answer on ${subject} within ${timeoutMs} ms: it may still be planning a large deployment (raise the timeout), or start it with npm run start:graph-planner`,
        { cause: err },
      );
    }
    throw err;
  }
  return parsePlanReply(data, subject);
}

function parsePlanReply(data: string, subject: string): PlanReplyMessage {
  let reply: unknown;
  try {
    reply = JSON.parse(data);
  } catch (err) {
    throw new PlannerClientError('PLANNER_BAD_REPLY', `the answer on ${subject} is not JSON: ${data.slice(0, 200)}`, {
      cause: err,
    });
  }
  const r = reply as Record<string, unknown> | null;
  const valid =
    r !== null &&
    typeof r === 'object' &&
    ((r.ok === true &&
      typeof r.planId === 'string' &&
      typeof r.planHash === 'string' &&
      typeof r.instances === 'number' &&
      typeof r.tasks === 'number' &&
      Array.isArray(r.nodes)) ||
      (r.ok === false && typeof r.code === 'string' && typeof r.message === 'string'));
  if (!valid)
    throw new PlannerClientError(
      'PLANNER_BAD_REPLY',
      `the answer on ${subject} is not a plan reply: ${data.slice(0, 200)}`,
    );
  return reply as PlanReplyMessage;
}
