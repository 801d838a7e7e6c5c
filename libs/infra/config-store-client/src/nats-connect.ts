import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { NatsUnavailableError } from './config-store-client.errors';

/** The NATS URL used when nothing else names one. */
export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';

/** What to tell the user to do when NATS is down; the CLI and the services word it alike. */
export const NATS_HINT = 'start it with tools/setup.sh or set GRANULE_NATS_URL';

/**
 * Connects to NATS once (no retry loop at start: a wrong URL should fail fast) and keeps
 * reconnecting afterwards. Throws `NatsUnavailableError`:
 * `cannot reach NATS at <url>: connection refused — <hint>`.
 */
export async function connectNats(
  url: string,
  options: { name: string; hint?: string; timeoutMs?: number },
): Promise<NatsConnection> {
  try {
    return await connect({
      servers: url,
      name: options.name,
      timeout: options.timeoutMs ?? 5000,
      waitOnFirstConnect: false,
      maxReconnectAttempts: -1,
    });
  } catch (err) {
    const cause = err as { message?: string; cause?: { code?: string } };
    const why = cause.cause?.code === 'ENOTFOUND' ? 'unknown host' : (cause.message ?? String(err)).split('\n')[0];
    throw new NatsUnavailableError(
      'NATS_UNAVAILABLE',
      `cannot reach NATS at ${url}: ${why} — ${options.hint ?? NATS_HINT}`,
      { cause: err },
    );
  }
}
