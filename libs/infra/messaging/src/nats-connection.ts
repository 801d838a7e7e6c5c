import { connect, type NatsConnection } from '@nats-io/transport-node';
import { NatsUnreachableError } from './messaging.errors';

export interface ConnectNatsOptions {
  /** Milliseconds to wait for the first connection. Default 5000. */
  timeoutMs?: number;
}

/**
 * Connects to NATS at `url` (one URL or a comma-separated list) under the client name `name`.
 * A failed first connection throws `NatsUnreachableError` (`NATS_UNREACHABLE`) naming the URL
 * and the reason; once connected, the client reconnects forever (a broker restart is not fatal).
 * Requests (JetStream publishes included) do not capture the caller's stack up front
 * (`noAsyncTraces`): that cost two stack captures per request, on every dispatch and result,
 * and our logs carry an error's message, not its stack.
 */
export async function connectNats(
  url: string,
  name: string,
  options: ConnectNatsOptions = {},
): Promise<NatsConnection> {
  const servers = url
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  try {
    return await connect({
      servers,
      name,
      timeout: options.timeoutMs ?? 5000,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 1000,
      noAsyncTraces: true,
    });
  } catch (err) {
    throw new NatsUnreachableError(url, reasonOf(err), { cause: err });
  }
}

function reasonOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? err.cause.message : undefined;
  return cause && !err.message.includes(cause) ? `${err.message} (${cause})` : err.message;
}
