import { MAX_REPLY_MESSAGES } from '@granule/contracts';
import { InvalidInputError, parseJsonText } from '@granule/core';

/** Most chunks one reply may take (64 MiB at NATS' default 1 MiB max_payload). */
/** At most this many chunks per answer: what a responder's credential may send to one requester. */
export const MAX_REPLY_CHUNKS = MAX_REPLY_MESSAGES;

const decoder = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

function refused(message: string): InvalidInputError {
  return new InvalidInputError([{ severity: 'error', code: 'INVALID_INPUT', message }]);
}

/**
 * A request's JSON body (`{}` when empty). Refuses, as invalid input naming the operation
 * (`the config.env.update request`), bytes that are not UTF-8, and what core's `parseJsonText`
 * refuses (nesting past the bound, control characters, a syntax error), without quoting the
 * request back.
 */
export function parseRequestJson(data: Uint8Array, operation: string): unknown {
  if (data.length === 0) return {};
  const what = `the ${operation} request`;
  let text: string;
  try {
    text = decoder.decode(data);
  } catch {
    throw refused(`${what} is not UTF-8 text`);
  }
  const parsed = parseJsonText(text, what);
  // A request body is one line of JSON: its line number says nothing.
  if ('problem' in parsed) throw new InvalidInputError([{ ...parsed.problem, line: undefined }]);
  return parsed.value;
}

/**
 * A value as JSON bytes in pieces of at most `limit` bytes (headers and protocol need some room
 * under max_payload). One piece when it fits.
 */
export function encodeChunks(value: unknown, maxPayload: number): Uint8Array[] {
  const bytes = encoder.encode(JSON.stringify(value));
  const limit = Math.max(1024, maxPayload - 4096);
  if (bytes.length <= limit) return [bytes];
  const count = Math.ceil(bytes.length / limit);
  if (count > MAX_REPLY_CHUNKS) {
    const tooBig = {
      ok: false,
      error: {
        code: 'REPLY_TOO_LARGE',
        message: `the answer is ${bytes.length} bytes, more than ${MAX_REPLY_CHUNKS} messages of ${limit} bytes: ask for less (a limit or a filter)`,
      },
    };
    return [encoder.encode(JSON.stringify(tooBig))];
  }
  const chunks: Uint8Array[] = [];
  for (let k = 0; k < count; k++) chunks.push(bytes.subarray(k * limit, (k + 1) * limit));
  return chunks;
}
