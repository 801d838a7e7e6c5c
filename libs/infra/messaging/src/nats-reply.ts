import { GranuleError, InvalidInputError } from '@granule/core';
import type { Reply, ReplyError } from '@granule/contracts';

/**
 * The error part of a reply. A `GranuleError` keeps its code (and an `InvalidInputError` its
 * findings); anything else is an internal error, which the caller logs.
 */
export function toReplyError(err: unknown): ReplyError {
  if (err instanceof InvalidInputError) return { code: err.code, message: err.message, diagnostics: err.diagnostics };
  if (err instanceof GranuleError) return { code: err.code, message: err.message };
  return { code: 'INTERNAL', message: `internal error: ${err instanceof Error ? err.message : String(err)}` };
}

export function okReply<T>(result: T): Reply<T> {
  return { ok: true, result };
}

export function errorReply(err: unknown): Reply<never> {
  return { ok: false, error: toReplyError(err) };
}

/** A request the other side refused, with its stable code (and its findings, as `InvalidInputError`). */
export class RemoteError extends GranuleError<string> {}

/** The result of a reply, or its refusal thrown: `InvalidInputError` with findings, else `RemoteError`. */
export function unwrapReply<T>(reply: Reply<T>): T {
  if (reply.ok) return reply.result;
  const { code, message, diagnostics } = reply.error;
  if (diagnostics && diagnostics.length > 0 && code === 'INVALID_INPUT') throw new InvalidInputError(diagnostics);
  throw new RemoteError(code, message);
}

/** True for a well-formed envelope (a service of another version may answer anything). */
export function isReply(value: unknown): value is Reply<unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as { ok?: unknown; error?: { code?: unknown; message?: unknown } };
  if (v.ok === true) return 'result' in v;
  return v.ok === false && typeof v.error?.code === 'string' && typeof v.error?.message === 'string';
}
