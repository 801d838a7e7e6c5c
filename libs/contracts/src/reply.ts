import type { Diagnostic } from '@granule/core';

/** Why a request was refused: a stable code, a message for the operator, and findings in input files. */
export interface ReplyError {
  code: string;
  message: string;
  /** Every finding, for a refusal of invalid input (`INVALID_INPUT`, plugin and plan codes). */
  diagnostics?: Diagnostic[];
}

/**
 * The one envelope of every NATS request/reply answer in every service (config-store,
 * graph-planner, the orchestrator's run queries, commands and agent registration): the result,
 * or an error with a stable code.
 */
export type Reply<T> = { ok: true; result: T } | { ok: false; error: ReplyError };
