import { InvalidInputError } from '@granule/core';

/** Deepest nesting of arrays and objects a request may have: real requests stay under 10. */
export const MAX_REQUEST_DEPTH = 64;

/** Most chunks one reply may take (64 MiB at NATS' default 1 MiB max_payload). */
export const MAX_REPLY_CHUNKS = 64;

const decoder = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

/** How deep `text` nests arrays and objects, read without parsing (strings skipped). */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

function refused(message: string): InvalidInputError {
  return new InvalidInputError([{ severity: 'error', code: 'INVALID_INPUT', message }]);
}

/**
 * A request's JSON body (`{}` when empty). Refuses, as invalid input naming the subject, bytes
 * that are not UTF-8, text that is not JSON, and nesting deeper than `MAX_REQUEST_DEPTH`
 * (validation recurses into it).
 */
export function parseRequestJson(data: Uint8Array, subject: string): unknown {
  if (data.length === 0) return {};
  let text: string;
  try {
    text = decoder.decode(data);
  } catch {
    throw refused(`the request on ${subject} is not UTF-8 text`);
  }
  const depth = jsonDepth(text);
  if (depth > MAX_REQUEST_DEPTH)
    throw refused(`the request on ${subject} nests ${depth} levels deep; at most ${MAX_REQUEST_DEPTH} are accepted`);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw refused(`the request on ${subject} is not JSON: ${(err as Error).message}`);
  }
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
