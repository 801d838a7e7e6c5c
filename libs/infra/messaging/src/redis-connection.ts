import { Redis } from 'ioredis';
import { RedisUnreachableError } from './messaging.errors';

/** The Redis client `connectRedis` returns (ioredis). */
export type RedisConnection = Redis;

export interface ConnectRedisOptions {
  /** Milliseconds to wait for the first connection. Default 5000. */
  timeoutMs?: number;
}

/**
 * Connects to Redis at `url` (`redis://[:password@]host:port[/db]`) and waits until it answers.
 * A failed first connection throws `RedisUnreachableError` (`REDIS_UNREACHABLE`) with the
 * reason; once connected, the client reconnects with a capped back-off and a command fails
 * after one retry instead of waiting forever (callers such as heartbeats just try again).
 */
export async function connectRedis(url: string, options: ConnectRedisOptions = {}): Promise<RedisConnection> {
  let connected = false;
  let lastError: Error | undefined;
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: options.timeoutMs ?? 5000,
    maxRetriesPerRequest: 1,
    retryStrategy: (times) => (connected ? Math.min(times * 200, 2000) : null),
  });
  // Without a listener ioredis prints every connection error; callers log what they need.
  redis.on('error', (err: Error) => {
    lastError = err;
  });
  try {
    await redis.connect();
    connected = true;
    return redis;
  } catch (err) {
    // An ended client holds nothing; disconnect() would only arm ioredis' 2 s disconnect timer.
    if (redis.status !== 'end') redis.disconnect();
    throw new RedisUnreachableError(url, (lastError ?? (err as Error)).message, { cause: lastError ?? err });
  }
}

/**
 * An error of a Redis command in words an operator can act on: ioredis fails a command sent
 * while its connection is down with "Reached the max retries per request limit", which does not
 * say Redis is the problem. Other errors keep their message.
 */
export function describeFailure(err: unknown): string {
  if (err instanceof Error && err.name === 'MaxRetriesPerRequestError')
    return 'Redis does not answer: the connection is down and the client is reconnecting';
  return err instanceof Error ? err.message : String(err);
}
