// Type only (erased): the class is a plain one, provided by a factory, so the CLI that loads this
// library never loads Nest.
import type { OnModuleDestroy } from '@nestjs/common';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { ConsumerConfig, ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { JetStreamSetupError } from './messaging.errors';

/** What becomes of a message once handled: acknowledged, dropped for good, or handed back (after `nak` ms). */
export type Settle = 'ack' | 'term' | { nak: number };

/** The pino-style lines the consumers write (outages, once each, and handler failures). */
export interface ConsumerLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** Wait before a consumer that ended (NATS gone, consumer or stream deleted) is set up again. */
export const CONSUMER_RESTART_MS = 1000;

interface ConsumerSpecBase {
  /** What the consumer feeds, in log lines ("command feed"). */
  what: string;
  /** Fields added to its log lines (a run id, say). */
  fields?: Record<string, unknown>;
  stream: string;
  /**
   * Ensured (created, or found as it is) at every start and restart. With `durable_name` the
   * replicas share it; without, each start makes a new ephemeral consumer (set
   * `inactive_threshold` so the server drops the old ones).
   */
  config: Partial<ConsumerConfig>;
  /** Messages pulled at once (JetStream's default is 100); 1 takes the next only once the last is in hand. */
  maxMessages?: number;
  restartMs?: number;
}

/** One message at a time, in stream order: the next is handled once `handle` resolved. */
export interface MessageConsumerSpec extends ConsumerSpecBase {
  handle(msg: JsMsg): Promise<Settle>;
}

/**
 * Batches: the messages that arrive while a batch is handled form the next one (at most `batch`),
 * in stream order. `handleBatch` answers one `Settle` per message, in the order given.
 */
export interface BatchConsumerSpec extends ConsumerSpecBase {
  batch: number;
  handleBatch(msgs: readonly JsMsg[]): Promise<readonly Settle[]>;
}

export type ConsumerSpec = MessageConsumerSpec | BatchConsumerSpec;

/** A consumer being consumed; `stop()` returns once the message (or batch) in hand is handled. */
export interface ConsumerRun {
  /** True once `stop()` was called (a handler's long retry ends when it turns true). */
  readonly stopping: boolean;
  stop(): Promise<void>;
}

/**
 * Every JetStream consumer of a service, one way (a Nest provider, `onModuleDestroy` stops them
 * all): `start` ensures the consumer and feeds its messages to a handler that answers ack, nak
 * (with a delay) or term. JetStream's client re-pulls after a reconnection or missed heartbeats
 * (a server restart); a consumer or stream that disappears, or a feed that ends, is set up again
 * every `restartMs` until it works, and the outage is logged once, with one line when it works
 * again. A handler that throws is logged, its messages are left unsettled (delivered again after
 * the consumer's `ack_wait`) and the feed restarts. Messages still buffered when it stops are
 * handed back at once; one delivered into a pull still in flight at the stop comes back after
 * the consumer's `ack_wait`.
 */
export class JetStreamConsumers implements OnModuleDestroy {
  private readonly runs = new Set<ConsumerLoop>();
  private destroyed = false;

  constructor(
    private readonly nats: NatsConnection,
    private readonly logger: ConsumerLogger,
  ) {}

  /**
   * Ensures the consumer (throws `JetStreamSetupError` when JetStream refuses it: a setting that
   * cannot change, no such stream) and consumes it in the background until `stop()`.
   */
  async start(spec: ConsumerSpec): Promise<ConsumerRun> {
    if (this.destroyed) throw new JetStreamSetupError(`cannot start the ${spec.what}: the service is stopping`);
    const run = new ConsumerLoop(this.nats, this.logger, spec);
    await run.begin();
    // Destroyed while the consumer was set up: it stops with the others.
    if (this.destroyed) await run.stop();
    this.runs.add(run);
    void run.ended.then(() => this.runs.delete(run));
    return run;
  }

  /** Stops every consumer; each returns once its message in hand is handled. */
  async onModuleDestroy(): Promise<void> {
    this.destroyed = true;
    await Promise.all([...this.runs].map((run) => run.stop()));
  }
}

class ConsumerLoop implements ConsumerRun {
  private feed?: ConsumerMessages;
  private stopped?: Promise<void>;
  private loop: Promise<void> = Promise.resolve();
  private wake?: () => void;
  private failures = 0;
  private failingSince = 0;

  constructor(
    private readonly nats: NatsConnection,
    private readonly logger: ConsumerLogger,
    private readonly spec: ConsumerSpec,
  ) {}

  get stopping(): boolean {
    return this.stopped !== undefined;
  }

  /** Resolves when the loop has ended (stopped, or the connection closed). */
  get ended(): Promise<void> {
    return this.loop;
  }

  async begin(): Promise<void> {
    const name = await this.ensure();
    this.loop = this.keepConsuming(name);
  }

  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.wake?.();
      await this.feed?.close();
      await this.loop;
    })();
    return this.stopped;
  }

  /** Creates the consumer, or finds it as it is; its name. */
  private async ensure(): Promise<string> {
    const { stream, config, what } = this.spec;
    try {
      const jsm = await jetstreamManager(this.nats);
      return (await jsm.consumers.add(stream, config)).name;
    } catch (err) {
      throw new JetStreamSetupError(
        `cannot set up the consumer ${config.durable_name ?? '(ephemeral)'} of the ${what} on stream ${stream}: ${(err as Error).message}`,
        { cause: err },
      );
    }
  }

  private async keepConsuming(first: string): Promise<void> {
    let name: string | undefined = first;
    const restartMs = this.spec.restartMs ?? CONSUMER_RESTART_MS;
    while (!this.stopping && !this.nats.isClosed()) {
      try {
        name ??= await this.ensure();
        const consumer = await jetstream(this.nats).consumers.get(this.spec.stream, name);
        // A consumer or stream deleted under it ends the feed (JetStream's client would wait for
        // someone else to make it again): it is made again here.
        const feed = await consumer.consume({
          ...(this.spec.maxMessages === undefined ? {} : { max_messages: this.spec.maxMessages }),
          abort_on_missing_resource: true,
        });
        this.feed = feed;
        if (this.stopping) await feed.close();
        this.worksAgain();
        await ('batch' in this.spec ? this.pumpBatches(feed, this.spec) : this.pump(feed, this.spec));
      } catch (err) {
        if (this.stopping) break;
        // A handler's failure was logged where it happened; it is no outage of the consumer.
        if (!(err instanceof HandlerFailure)) this.failed(err);
      }
      name = undefined;
      if (!this.stopping) await this.pause(restartMs);
    }
  }

  private async pump(feed: ConsumerMessages, spec: MessageConsumerSpec): Promise<void> {
    for await (const msg of feed) {
      if (this.stopping) {
        msg.nak();
        continue;
      }
      settle(msg, await this.handled(() => spec.handle(msg)));
    }
  }

  private async pumpBatches(feed: ConsumerMessages, spec: BatchConsumerSpec): Promise<void> {
    const pending: JsMsg[] = [];
    let failure: { err: unknown } | undefined;
    let draining: Promise<void> | undefined;
    // `running` is cleared in the same step that finds `pending` empty, so a message pushed after
    // that step starts a new drain. (Clearing it in a `.finally` left a window of one microtask in
    // which a message that arrived was pushed, saw a drain "running", and waited for the next one.)
    let running = false;
    const drain = async (): Promise<void> => {
      running = true;
      try {
        while (pending.length > 0 && !failure) {
          const batch = pending.splice(0, spec.batch);
          if (this.stopping) {
            for (const msg of batch) msg.nak();
            continue;
          }
          try {
            const settles = await spec.handleBatch(batch);
            batch.forEach((msg, i) => settle(msg, settles[i]));
          } catch (err) {
            failure = { err };
            await feed.close();
          }
        }
      } finally {
        running = false;
      }
    };
    for await (const msg of feed) {
      if (failure) continue; // left unsettled, as the batch that failed
      pending.push(msg);
      if (!running) draining = drain();
    }
    await draining;
    if (failure) throw this.handlerFailed(failure.err);
  }

  private async handled(handle: () => Promise<Settle>): Promise<Settle> {
    try {
      return await handle();
    } catch (err) {
      throw this.handlerFailed(err);
    }
  }

  private handlerFailed(err: unknown): HandlerFailure {
    this.logger.error(
      { ...this.spec.fields, err: (err as Error).message },
      `the ${this.spec.what} failed to handle a message; it is delivered again`,
    );
    return new HandlerFailure(err);
  }

  /** Logged once per outage (the first failure), with a line when it works again. */
  private failed(err: unknown): void {
    if (this.failures++ > 0) return;
    this.failingSince = Date.now();
    this.logger.warn(
      { ...this.spec.fields, stream: this.spec.stream, err: (err as Error).message },
      `the ${this.spec.what} stopped; setting it up again every ${(this.spec.restartMs ?? CONSUMER_RESTART_MS) / 1000} s`,
    );
  }

  private worksAgain(): void {
    if (this.failures === 0) return;
    this.logger.info(
      {
        ...this.spec.fields,
        stream: this.spec.stream,
        failedAttempts: this.failures,
        failedForS: Math.round((Date.now() - this.failingSince) / 1000),
      },
      `the ${this.spec.what} consumes again`,
    );
    this.failures = 0;
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}

/** A handler threw: the feed restarts, and its messages come again after `ack_wait`. */
class HandlerFailure extends Error {
  constructor(readonly err: unknown) {
    super((err as Error)?.message ?? String(err));
  }
}

function settle(msg: JsMsg, how: Settle | undefined): void {
  if (how === 'ack') msg.ack();
  else if (how === 'term') msg.term();
  else if (how !== undefined) msg.nak(how.nak > 0 ? how.nak : undefined);
}
