import { GranuleError } from '@granule/core';

/** How many Server-Sent Event streams config-store serves at once. */
export interface StreamLimits {
  /** In all (GRANULE_HTTP_MAX_STREAMS). */
  total: number;
  /** For one API caller (GRANULE_HTTP_MAX_STREAMS_PER_CALLER). */
  perCaller: number;
}

/** A stream refused because as many are open as config-store serves: HTTP 429 with Retry-After. */
export class TooManyStreamsError extends GranuleError<'TOO_MANY_STREAMS'> {
  constructor(message: string) {
    super('TOO_MANY_STREAMS', message);
  }
}

/** Seconds a refused client is asked to wait before it tries again. */
export const STREAM_RETRY_AFTER_S = 5;

/**
 * The open streams, counted in all and by caller. Each stream holds an HTTP connection and NATS
 * subscriptions for as long as its run goes on (hours): without a bound, a client that opens
 * streams in a loop would take config-store's memory and NATS's subscriptions, and one caller's
 * runaway dashboard could take every slot from the others.
 */
export class StreamSlots {
  private open = 0;
  private readonly byCaller = new Map<string, number>();

  constructor(readonly limits: StreamLimits) {}

  /** Takes a slot for `caller`, or refuses naming the limit reached; the function gives it back (once). */
  take(caller: string): () => void {
    const mine = this.byCaller.get(caller) ?? 0;
    if (mine >= this.limits.perCaller)
      throw new TooManyStreamsError(
        `caller '${caller}' has ${mine} streams open, the most one caller may (GRANULE_HTTP_MAX_STREAMS_PER_CALLER=${this.limits.perCaller}): close one, or try again in ${STREAM_RETRY_AFTER_S} s`,
      );
    if (this.open >= this.limits.total)
      throw new TooManyStreamsError(
        `${this.open} streams are open, the most config-store serves (GRANULE_HTTP_MAX_STREAMS=${this.limits.total}): try again in ${STREAM_RETRY_AFTER_S} s`,
      );
    this.open++;
    this.byCaller.set(caller, mine + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.open--;
      const left = (this.byCaller.get(caller) ?? 1) - 1;
      if (left > 0) this.byCaller.set(caller, left);
      else this.byCaller.delete(caller);
    };
  }

  /** Streams open now, in all and for `caller`. */
  count(caller?: string): number {
    return caller === undefined ? this.open : (this.byCaller.get(caller) ?? 0);
  }
}
