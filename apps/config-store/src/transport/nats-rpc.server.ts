import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { CONFIG_STORE_QUEUE, configSubjectWildcard } from '@granule/contracts';
import type { ConfigReply } from '@granule/contracts';
import type { ConfigStoreApi } from './config-store.api';
import { toReplyError } from './config-store.api';

/** Where the server reports internal errors (the app's logger). */
export type ErrorLog = (message: string, err: unknown) => void;

/**
 * Serves the config-store API over core NATS request/reply: one subscription to
 * `<prefix>.config.>` in the queue group `config-store` (replicas share the load), JSON in,
 * `{ok, data}` / `{ok: false, error}` out. Requests are handled concurrently.
 */
export class NatsRpcServer {
  private subscription?: Subscription;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly api: ConfigStoreApi,
    private readonly prefix: string,
    private readonly logError: ErrorLog,
  ) {}

  /** Subscribes; resolves once the server has the subscription, so requests sent after it are answered. */
  async start(): Promise<void> {
    if (this.subscription) throw new Error('NatsRpcServer is already started');
    const base = `${this.prefix}.config.`;
    this.subscription = this.nc.subscribe(configSubjectWildcard(this.prefix), {
      queue: CONFIG_STORE_QUEUE,
      callback: (err, msg) => {
        if (err) {
          this.logError('NATS subscription error', err);
          return;
        }
        const work = this.answer(msg, msg.subject.slice(base.length)).finally(() => this.inFlight.delete(work));
        this.inFlight.add(work);
      },
    });
    await this.nc.flush();
  }

  /** Stops taking requests and waits for those in flight. */
  async stop(): Promise<void> {
    if (!this.subscription) return;
    await this.subscription.drain();
    this.subscription = undefined;
    await Promise.allSettled([...this.inFlight]);
  }

  private async answer(msg: Msg, operation: string): Promise<void> {
    const reply = await this.reply(msg, operation);
    if (msg.reply) msg.respond(JSON.stringify(reply));
  }

  private async reply(msg: Msg, operation: string): Promise<ConfigReply<unknown>> {
    if (!this.api.isOperation(operation)) {
      return {
        ok: false,
        error: { code: 'CONFIG_UNKNOWN_OPERATION', message: `unknown operation '${operation}' on ${msg.subject}` },
      };
    }
    let payload: unknown = {};
    if (msg.data.length > 0) {
      try {
        payload = JSON.parse(msg.string());
      } catch (err) {
        return {
          ok: false,
          error: {
            code: 'INVALID_INPUT',
            message: `the request on ${msg.subject} is not JSON: ${(err as Error).message}`,
          },
        };
      }
    }
    try {
      return { ok: true, data: await this.api.handle(operation, payload) };
    } catch (err) {
      const error = toReplyError(err);
      if (error.code === 'INTERNAL') this.logError(`${operation} failed`, err);
      return { ok: false, error };
    }
  }
}
