import { GranuleError } from '@granule/core';
import type { ExpectedVersion } from './event-store.types';

function describeExpected(expected: ExpectedVersion): string {
  return expected === 'no_stream' ? 'no stream' : `version ${expected}`;
}

/**
 * The stream's version is not the one the writer expected: someone else appended first.
 * Reload the stream, decide again, retry.
 */
export class ConcurrencyError extends GranuleError<'EVENT_STORE_CONCURRENCY'> {
  constructor(
    readonly streamId: string,
    readonly expectedVersion: ExpectedVersion,
    /** `null` when the stream has no events. */
    readonly actualVersion: number | null,
    options?: { cause?: unknown },
  ) {
    const actual = actualVersion === null ? 'the stream does not exist' : `the stream is at version ${actualVersion}`;
    super(
      'EVENT_STORE_CONCURRENCY',
      `stream '${streamId}': expected ${describeExpected(expectedVersion)} but ${actual}`,
      options,
    );
  }
}

/** An append that can never succeed: a malformed stream id, no events, a bad expected version. */
export class InvalidAppendError extends GranuleError<'EVENT_STORE_INVALID_APPEND'> {
  constructor(message: string) {
    super('EVENT_STORE_INVALID_APPEND', message);
  }
}
