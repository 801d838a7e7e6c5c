import { GranuleError, redactUrl } from '@granule/core';

export { redactUrl };

/** NATS did not answer at the configured address (refused, unknown host, timeout). */
export class NatsUnreachableError extends GranuleError<'NATS_UNREACHABLE'> {
  constructor(
    readonly url: string,
    readonly reason: string,
    options?: { cause?: unknown; hint?: string },
  ) {
    super(
      'NATS_UNREACHABLE',
      `cannot reach NATS at ${redactUrl(url)}: ${reason} — ${options?.hint ?? 'start it (tools/setup.sh) or set GRANULE_NATS_URL'}`,
      options,
    );
  }
}

/** Redis did not answer at the configured address. */
export class RedisUnreachableError extends GranuleError<'REDIS_UNREACHABLE'> {
  constructor(
    readonly url: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      'REDIS_UNREACHABLE',
      `cannot reach Redis at ${redactUrl(url)}: ${reason} — start it (tools/setup.sh) or set GRANULE_REDIS_URL`,
      options,
    );
  }
}

/** A JetStream stream or consumer could not be created or updated. */
export class JetStreamSetupError extends GranuleError<'JETSTREAM_SETUP_FAILED'> {
  constructor(message: string, options?: { cause?: unknown }) {
    super('JETSTREAM_SETUP_FAILED', message, options);
  }
}

/** A message body is not the JSON document its subject promises. */
export class MessageDecodeError extends GranuleError<'MESSAGE_DECODE_FAILED'> {
  constructor(
    readonly subject: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super('MESSAGE_DECODE_FAILED', `message on '${subject}' is not valid JSON: ${reason}`, options);
  }
}
