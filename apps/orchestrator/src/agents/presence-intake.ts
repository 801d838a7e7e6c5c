import { Inject, Injectable } from '@nestjs/common';
import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Redis } from 'ioredis';
import { executionSubjects, ID_PATTERN, redisKeys } from '@granule/contracts';
import type { ExecutionSubjects } from '@granule/contracts';
import type { Logger } from '@granule/service-kit';
import { OrchestratorConfig } from '../orchestrator.config';
import { LOGGER, NATS, REDIS } from '../orchestrator.tokens';

/**
 * Whether `msg` was sent by JetStream rather than published by a client: a push consumer's
 * delivery (its reply subject is `$JS.ACK.…`, `$JS.FC.…` for flow control) or one of its idle
 * heartbeats (a status header, no body). A party that may create a consumer on some stream could
 * point its deliver subject at a node's heartbeat subject (NATS permissions cannot stop that,
 * docs/architecture.md "Security model"); an agent's own beat is a plain publish.
 */
export function jetStreamDelivery(msg: Msg): boolean {
  return (msg.reply ?? '').startsWith('$JS.') || (msg.headers?.code ?? 0) > 0;
}

/** Queue group of the orchestrators' heartbeat subscriptions: each beat is written once. */
export const PRESENCE_QUEUE = 'orchestrator-presence';

/**
 * Keeps the agents' presence keys in Redis from their heartbeats on NATS
 * (`<prefix>.agent.heartbeat.<node>`): agents reach nothing but NATS, and none holds a
 * credential that could write another node's presence or touch a run lease. The node is the one
 * the subject names, which NATS lets only that node's agent publish on; the body is not trusted
 * for it, and what JetStream delivers there is no beat (`jetStreamDelivery`). A beat marked `leaving` (a graceful stop) deletes the key at once.
 *
 * Beats go to one orchestrator of the queue group. While this orchestrator's NATS connection is
 * down, or for a whole TTL after it came (back), a missing key may be a beat it could not
 * receive: `listeningFor` tells the presence checks so, and they do not take absence as an agent
 * gone then (as after a Redis restart).
 */
@Injectable()
export class PresenceIntake implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly subjects: ExecutionSubjects;
  private readonly keys: ReturnType<typeof redisKeys>;
  private sub?: Subscription;
  /** Since when (monotonic ms) the subscription has been receiving without a break; undefined while cut off. */
  private since?: number;
  private failing = false;

  constructor(
    @Inject(NATS) private readonly nats: NatsConnection,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(OrchestratorConfig) private readonly config: OrchestratorConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.subjects = executionSubjects(config.subjectPrefix);
    this.keys = redisKeys(config.subjectPrefix);
  }

  onApplicationBootstrap(): void {
    this.sub = this.nats.subscribe(this.subjects.agents.heartbeats, {
      queue: PRESENCE_QUEUE,
      callback: (err, msg) => {
        if (!err && !jetStreamDelivery(msg)) this.take(msg.subject, msg.data);
      },
    });
    this.since = performance.now();
    void (async () => {
      for await (const s of this.nats.status()) {
        if (s.type === 'disconnect') this.since = undefined;
        else if (s.type === 'reconnect') this.since = performance.now();
      }
    })().catch(() => undefined);
  }

  onApplicationShutdown(): void {
    this.sub?.unsubscribe();
  }

  /** How long (ms) heartbeats have reached this orchestrator without a break; 0 while its NATS connection is down. */
  listeningFor(now = performance.now()): number {
    return this.since === undefined ? 0 : now - this.since;
  }

  private take(subject: string, data: Uint8Array): void {
    const uid = this.subjects.agents.heartbeatNodeOf(subject);
    if (uid === undefined || !ID_PATTERN.test(uid)) return;
    let leaving = false;
    try {
      leaving = (JSON.parse(new TextDecoder().decode(data)) as { leaving?: unknown })?.leaving === true;
    } catch {
      // A beat is a beat: the subject says who; a body that is not JSON changes nothing.
    }
    const key = this.keys.presence(uid);
    const write = leaving
      ? this.redis.del(key)
      : this.redis.set(
          key,
          JSON.stringify({ uid, at: new Date().toISOString() }),
          'EX',
          this.config.presenceTtlSeconds,
        );
    write.then(
      () => {
        if (this.failing) this.logger.info({}, 'presence keys are written again');
        this.failing = false;
      },
      (err: Error) => {
        if (!this.failing)
          this.logger.warn({ err: err.message }, 'cannot write a presence key; retrying at every beat');
        this.failing = true;
      },
    );
  }
}
