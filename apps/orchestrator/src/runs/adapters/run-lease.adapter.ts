import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { redisKeys } from '@granule/contracts';
import type { RunLease } from '@granule/run-coordination';

/**
 * Who holds a lease: the replica's stable name (GRANULE_INSTANCE_ID: the pod name in Helm, the
 * host name otherwise) and this process's incarnation, new at every start. Stored as
 * `<replica>#<incarnation>` (ADR 0028).
 */
export interface LeaseHolder {
  readonly replica: string;
  readonly incarnation: string;
}

/** This process's holder identity for `replica`: a fresh incarnation every start. */
export function newLeaseHolder(replica: string): LeaseHolder {
  return { replica, incarnation: randomBytes(8).toString('hex') };
}

export function formatLeaseHolder(holder: LeaseHolder): string {
  return `${holder.replica}#${holder.incarnation}`;
}

/** The holder a lease value names; undefined for a value of another shape (an older release's). */
export function parseLeaseHolder(value: string): LeaseHolder | undefined {
  const at = value.lastIndexOf('#');
  if (at <= 0 || at === value.length - 1) return undefined;
  return { replica: value.slice(0, at), incarnation: value.slice(at + 1) };
}

/** Tells whether an incarnation's process is gone for certain (false when it may be alive). */
export interface IncarnationProbe {
  isGone(incarnation: string): Promise<boolean>;
}

export interface RedisRunLeaseOptions {
  /** Without one, a lease is never taken back: it lapses. */
  probe?: IncarnationProbe;
  /** Told each time a lease is taken back from this replica's previous process. */
  onTakenBack?: (name: string, previous: string) => void;
  /** How long (ms) an incarnation found alive is not asked about again. Default 1000. */
  aliveCacheMs?: number;
  /** Milliseconds, monotonic. */
  clock?: () => number;
}

const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;
const TAKE_BACK = `if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('set', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 else return 0 end`;

/**
 * SET NX PX with the holder's name; renewed and released only by its holder.
 *
 * A lease held by an earlier incarnation of this same replica is taken back at once when that
 * process is gone for certain (the probe says so): a replica restarted after a crash goes on
 * with its runs without waiting for its own leases to lapse. A lease of another replica, or of
 * an incarnation that may still be alive, lapses as before (ADR 0028).
 */
export class RedisRunLease implements RunLease {
  private readonly value: string;
  private readonly gone = new Set<string>();
  private readonly aliveUntil = new Map<string, number>();
  private readonly aliveCacheMs: number;
  private readonly clock: () => number;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly holder: LeaseHolder,
    private readonly ttlMs: number,
    private readonly options: RedisRunLeaseOptions = {},
  ) {
    this.value = formatLeaseHolder(holder);
    this.aliveCacheMs = options.aliveCacheMs ?? 1000;
    this.clock = options.clock ?? (() => performance.now());
  }

  private key(runId: string): string {
    return redisKeys(this.prefix).runLease(runId);
  }

  async acquire(runId: string): Promise<boolean> {
    const key = this.key(runId);
    if ((await this.redis.set(key, this.value, 'PX', this.ttlMs, 'NX')) === 'OK') return true;
    const current = await this.redis.get(key);
    // Lapsed between the two questions: one more try.
    if (current === null) return (await this.redis.set(key, this.value, 'PX', this.ttlMs, 'NX')) === 'OK';
    if (current === this.value) return this.renew(runId);
    if (!(await this.previousGone(current))) return false;
    const taken = (await this.redis.eval(TAKE_BACK, 1, key, current, this.value, String(this.ttlMs))) === 1;
    if (taken) this.options.onTakenBack?.(runId, current);
    return taken;
  }

  async renew(runId: string): Promise<boolean> {
    return (await this.redis.eval(RENEW, 1, this.key(runId), this.value, String(this.ttlMs))) === 1;
  }

  async release(runId: string): Promise<void> {
    await this.redis.eval(RELEASE, 1, this.key(runId), this.value);
  }

  /** `current` is an earlier incarnation of this replica, and its process is gone for certain. */
  private async previousGone(current: string): Promise<boolean> {
    const previous = parseLeaseHolder(current);
    const probe = this.options.probe;
    if (!probe || previous?.replica !== this.holder.replica) return false;
    const { incarnation } = previous;
    if (this.gone.has(incarnation)) return true;
    const now = this.clock();
    if ((this.aliveUntil.get(incarnation) ?? -Infinity) > now) return false;
    if (await probe.isGone(incarnation)) {
      // An incarnation never comes back: no need to ask again.
      this.gone.add(incarnation);
      this.aliveUntil.delete(incarnation);
      return true;
    }
    this.aliveUntil.set(incarnation, now + this.aliveCacheMs);
    return false;
  }
}
