import { headers, type NatsConnection } from '@nats-io/transport-node';
import type { EventMetadata, EventStorePort, StoredEvent, Subscription } from './event-store.types';
import { streamTypeOf } from './stream-id';

/** Subject prefix of published events: `granule.events.<streamType>.<streamId>`. */
export const EVENT_SUBJECT_PREFIX = 'granule.events';

/** Checkpoint name the publisher uses unless told otherwise. */
export const NATS_OUTBOX_CONSUMER = 'granule-nats-outbox';

/** The NATS subject an event of `streamId` is published on, e.g. `granule.events.run.run-42`. */
export function eventSubject(streamId: string, prefix: string = EVENT_SUBJECT_PREFIX): string {
  return `${prefix}.${streamTypeOf(streamId)}.${streamId}`;
}

/** JSON body of a published event. `createdAt` is an ISO-8601 string. */
export interface PublishedEvent {
  type: string;
  schemaVersion: number;
  data: object;
  metadata: EventMetadata;
  streamId: string;
  streamType: string;
  streamVersion: number;
  globalPosition: string;
  transactionId: string;
  createdAt: string;
}

export interface NatsOutboxPublisherOptions {
  /** Checkpoint name; defaults to `granule-nats-outbox`. Run one publisher per name. */
  consumerName?: string;
  /** Defaults to `granule.events`. */
  subjectPrefix?: string;
  pollIntervalMs?: number;
  /** Wake on this process's appends, reading at most this often (`SubscribeOptions.minIntervalMs`). */
  minIntervalMs?: number;
  batchSize?: number;
  /**
   * Called on a failed batch (closed connection, database error); the batch is retried
   * after `pollIntervalMs` either way. Without it failures are retried silently: pass a logger.
   */
  onError?: (error: unknown) => void;
  /** Called at the first batch that works after a failure. */
  onRecovered?: () => void;
}

/**
 * Publishes committed events to NATS in commit order, as a checkpointed consumer of the log:
 * publish a batch, flush (the server has received it), then store the checkpoint.
 * At-least-once: a crash after the flush and before the checkpoint publishes the batch
 * again. Each message carries `Nats-Msg-Id: <globalPosition>`, so a JetStream stream that
 * captures these subjects drops such repeats within its duplicate window.
 */
export class NatsOutboxPublisher {
  private subscription: Subscription | null = null;
  private readonly consumerName: string;
  private readonly subjectPrefix: string;

  constructor(
    private readonly connection: NatsConnection,
    private readonly store: Pick<EventStorePort, 'subscribe'>,
    private readonly options: NatsOutboxPublisherOptions = {},
  ) {
    this.consumerName = options.consumerName ?? NATS_OUTBOX_CONSUMER;
    this.subjectPrefix = options.subjectPrefix ?? EVENT_SUBJECT_PREFIX;
  }

  /** Starts publishing from the stored checkpoint. Throws if already started. */
  start(): void {
    if (this.subscription) throw new Error('NatsOutboxPublisher is already started');
    this.subscription = this.store.subscribe(this.consumerName, (events) => this.publish(events), {
      pollIntervalMs: this.options.pollIntervalMs,
      minIntervalMs: this.options.minIntervalMs,
      batchSize: this.options.batchSize,
      onError: this.options.onError ?? (() => undefined),
      ...(this.options.onRecovered ? { onRecovered: this.options.onRecovered } : {}),
    });
  }

  /** Finishes the batch in flight (published and checkpointed), then stops. Idempotent. */
  async stop(): Promise<void> {
    const subscription = this.subscription;
    this.subscription = null;
    await subscription?.stop();
  }

  private async publish(events: StoredEvent[]): Promise<void> {
    for (const event of events) {
      const body: PublishedEvent = {
        ...event,
        streamType: streamTypeOf(event.streamId),
        createdAt: event.createdAt.toISOString(),
      };
      const h = headers();
      h.set('Nats-Msg-Id', event.globalPosition);
      h.set('Granule-Event-Type', event.type);
      this.connection.publish(eventSubject(event.streamId, this.subjectPrefix), JSON.stringify(body), { headers: h });
    }
    await this.connection.flush();
  }
}
