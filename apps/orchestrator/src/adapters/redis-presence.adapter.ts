import type { Redis } from 'ioredis';
import { redisKeys } from '@granule/contracts';
import type { Presence, RunLease } from '@granule/orchestration';

/** Keys per MGET: large enough to need few round trips, small enough not to hold Redis up. */
const PRESENCE_BATCH = 1000;

/**
 * Which of `nodes` have a presence key, in one MGET per 1,000 nodes (10,000 nodes: about 10 ms
 * here, against about 60 ms for as many pipelined EXISTS).
 */
export async function presentNodes(redis: Redis, prefix: string, nodes: readonly string[]): Promise<Set<string>> {
  const keys = redisKeys(prefix);
  const present = new Set<string>();
  for (let k = 0; k < nodes.length; k += PRESENCE_BATCH) {
    const batch = nodes.slice(k, k + PRESENCE_BATCH);
    const values = await redis.mget(batch.map((n) => keys.presence(n)));
    batch.forEach((n, i) => {
      if (values[i] !== null) present.add(n);
    });
  }
  return present;
}

/** A node is online while its agent's presence key exists (agents refresh it with a TTL). */
export class RedisPresence implements Presence {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async offline(nodes: string[]): Promise<string[]> {
    if (nodes.length === 0) return [];
    const present = await presentNodes(this.redis, this.prefix, nodes);
    return nodes.filter((n) => !present.has(n));
  }
}

const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/** SET NX PX with the holder's id; renewed and released only by its holder. */
export class RedisRunLease implements RunLease {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly holder: string,
    private readonly ttlMs: number,
  ) {}

  private key(runId: string): string {
    return redisKeys(this.prefix).runLease(runId);
  }

  async acquire(runId: string): Promise<boolean> {
    const key = this.key(runId);
    if ((await this.redis.set(key, this.holder, 'PX', this.ttlMs, 'NX')) === 'OK') return true;
    return (await this.redis.get(key)) === this.holder && (await this.renew(runId));
  }

  async renew(runId: string): Promise<boolean> {
    return (await this.redis.eval(RENEW, 1, this.key(runId), this.holder, String(this.ttlMs))) === 1;
  }

  async release(runId: string): Promise<void> {
    await this.redis.eval(RELEASE, 1, this.key(runId), this.holder);
  }
}
