// Stream ids are `<type>-<id>` (emmett's convention). The type is what outbox subjects and
// consumers filter on, so it must be recoverable from the id alone.

// Characters that would split or wildcard a NATS subject token.
const FORBIDDEN = /[\s.*>]/;

/** Builds a stream id, e.g. `toStreamId('run', '42')` -> `'run-42'`. */
export function toStreamId(streamType: string, id: string): string {
  return `${streamType}-${id}`;
}

/** The stream type of a valid stream id: the text before the first `-`. */
export function streamTypeOf(streamId: string): string {
  const dash = streamId.indexOf('-');
  return dash < 0 ? streamId : streamId.slice(0, dash);
}

/**
 * Why `streamId` is not a valid stream id, or `null` if it is. Valid: `<type>-<id>` with a
 * non-empty type and id and no whitespace, `.`, `*` or `>` (each becomes a NATS subject token).
 */
export function checkStreamId(streamId: string): string | null {
  const dash = streamId.indexOf('-');
  if (dash <= 0 || dash === streamId.length - 1) {
    return `stream id '${streamId}' must look like '<type>-<id>'`;
  }
  if (FORBIDDEN.test(streamId)) {
    return `stream id '${streamId}' must not contain whitespace, '.', '*' or '>'`;
  }
  return null;
}
