import { Inject, Injectable } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { executionSubjects } from '@granule/contracts';
import type { AgentHeartbeat } from '@granule/contracts';
import { AGENT_LOGGER, type AgentLogger } from './agent-logger';
import { NATS_CONNECTION } from './agent.tokens';
import { AGENT_CONFIG } from './config/agent-config.provider';
import type { AgentConfig } from './config/agent-config';

/**
 * Heartbeats on `<prefix>.agent.heartbeat.<uid>` (core NATS): the orchestrator keeps the node's
 * presence key in Redis from them, so the agent needs nothing but NATS and holds no credential
 * that could forge another node's presence. A beat goes out every heartbeat and at once when the
 * NATS connection is back; a graceful stop sends a last one marked `leaving`.
 */
@Injectable()
export class PresenceHeartbeat {
  private timer?: NodeJS.Timeout;
  private heartbeatSeconds: number;
  private readonly uid: string;
  private readonly subject: string;
  private watching = false;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(AGENT_CONFIG) config: AgentConfig,
    @Inject(AGENT_LOGGER) private readonly log: AgentLogger,
  ) {
    this.heartbeatSeconds = config.heartbeatSeconds;
    this.uid = config.nodeUid;
    this.subject = executionSubjects(config.subjectPrefix).agents.heartbeatFrom(config.nodeUid);
  }

  /** Beats now, then every heartbeat, and at once whenever the NATS connection is back. */
  start(): void {
    this.beat();
    this.schedule();
    if (!this.watching) {
      this.watching = true;
      void (async () => {
        for await (const s of this.nc.status()) {
          // An operator reading a host's journal sees when it was cut off from the bus and when it came back.
          if (s.type === 'disconnect') this.log.warn({ server: s.server }, 'lost the NATS connection; reconnecting');
          if (s.type === 'reconnect') {
            this.log.info({ server: s.server }, 'the NATS connection is back');
            this.beat();
          }
        }
      })().catch(() => undefined);
    }
  }

  /** Adopts the orchestrator's timing (from its registration reply); the TTL is the orchestrator's to apply. */
  retime(heartbeatSeconds: number, ttlSeconds: number): void {
    if (heartbeatSeconds === this.heartbeatSeconds) return;
    if (!(heartbeatSeconds >= 1 && ttlSeconds > heartbeatSeconds)) {
      this.log.warn(
        { heartbeatSeconds, ttlSeconds },
        'ignoring the orchestrator heartbeat settings: the TTL must be greater than the heartbeat',
      );
      return;
    }
    this.log.info({ heartbeatSeconds, ttlSeconds }, 'heartbeat timing set by the orchestrator');
    this.heartbeatSeconds = heartbeatSeconds;
    if (this.timer) this.schedule();
  }

  /** Stops beating and says so (the agent is gone, not merely late: its presence ends now). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.beat(true);
    await this.nc
      .flush()
      .catch((err: Error) =>
        this.log.warn({ err: err.message }, 'cannot send the last heartbeat; the presence expires by itself'),
      );
  }

  private schedule(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = setInterval(() => this.beat(), this.heartbeatSeconds * 1000);
  }

  private beat(leaving = false): void {
    const message: AgentHeartbeat = { uid: this.uid, at: new Date().toISOString(), ...(leaving ? { leaving } : {}) };
    try {
      // Buffered by the client while NATS is away; the beat after the reconnection is what counts.
      this.nc.publish(this.subject, JSON.stringify(message));
    } catch (err) {
      this.log.debug({ err: (err as Error).message }, 'heartbeat not sent');
    }
  }
}
