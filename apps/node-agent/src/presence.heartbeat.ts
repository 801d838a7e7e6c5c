import { Inject, Injectable } from '@nestjs/common';
import { redisKeys } from '@granule/contracts';
import type { RedisConnection } from '@granule/messaging';
import { AGENT_LOGGER, type AgentLogger } from './agent-logger';
import { REDIS_CONNECTION } from './agent.tokens';
import { AGENT_CONFIG } from './config/agent-config.provider';
import type { AgentConfig } from './config/agent-config';

/**
 * Presence in Redis: `SET <prefix>:presence:<uid> {"uid","at"} EX <ttl>` every heartbeat, so
 * the key disappears within the TTL of the agent's death; deleted on a graceful stop.
 */
@Injectable()
export class PresenceHeartbeat {
  private timer?: NodeJS.Timeout;
  private failing = false;
  private heartbeatSeconds: number;
  private ttlSeconds: number;
  private readonly uid: string;
  readonly key: string;

  constructor(
    @Inject(REDIS_CONNECTION) private readonly redis: RedisConnection,
    @Inject(AGENT_CONFIG) config: AgentConfig,
    @Inject(AGENT_LOGGER) private readonly log: AgentLogger,
  ) {
    this.key = redisKeys(config.subjectPrefix).presence(config.nodeUid);
    this.heartbeatSeconds = config.heartbeatSeconds;
    this.ttlSeconds = config.presenceTtlSeconds;
    this.uid = config.nodeUid;
  }

  /**
   * Beats now, then every heartbeat, and at once whenever the Redis connection is back: a
   * restarted Redis has lost the key, and the orchestrator waits only one TTL for it.
   */
  async start(): Promise<void> {
    await this.beat();
    this.schedule();
    this.redis.on('ready', this.beatOnReconnect);
  }

  /** Adopts the orchestrator's timing (from its registration reply). */
  retime(heartbeatSeconds: number, ttlSeconds: number): void {
    if (heartbeatSeconds === this.heartbeatSeconds && ttlSeconds === this.ttlSeconds) return;
    if (!(heartbeatSeconds >= 1 && ttlSeconds > heartbeatSeconds)) {
      this.log.warn(
        { heartbeatSeconds, ttlSeconds },
        'ignoring the orchestrator heartbeat settings: the TTL must be greater than the heartbeat',
      );
      return;
    }
    this.log.info({ heartbeatSeconds, ttlSeconds }, 'heartbeat timing set by the orchestrator');
    this.heartbeatSeconds = heartbeatSeconds;
    this.ttlSeconds = ttlSeconds;
    if (this.timer) this.schedule();
  }

  /** Stops beating and deletes the key (the agent is gone, not merely late). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.redis.off('ready', this.beatOnReconnect);
    await this.redis
      .del(this.key)
      .catch((err: Error) =>
        this.log.warn({ err: err.message }, 'cannot delete the presence key; it expires by itself'),
      );
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  private schedule(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = setInterval(() => void this.beat(), this.heartbeatSeconds * 1000);
  }

  private readonly beatOnReconnect = (): void => void this.beat();

  private async beat(): Promise<void> {
    try {
      await this.redis.set(
        this.key,
        JSON.stringify({ uid: this.uid, at: new Date().toISOString() }),
        'EX',
        this.ttlSeconds,
      );
      if (this.failing) this.log.info({ key: this.key }, 'presence heartbeats work again');
      this.failing = false;
    } catch (err) {
      if (!this.failing)
        this.log.warn(
          { key: this.key, err: (err as Error).message },
          'presence heartbeat failed; retrying at every beat',
        );
      this.failing = true;
    }
  }
}
