import { Catch } from '@nestjs/common';
import type { ArgumentsHost, RpcExceptionFilter } from '@nestjs/common';
import { NatsContext, ServerNats } from '@nestjs/microservices';
import { headers as natsHeaders } from '@nats-io/transport-node';
import type { Msg, MsgHdrs, NatsConnection, Subscription } from '@nats-io/transport-node';
import { throwError } from 'rxjs';
import type { Observable } from 'rxjs';
import { InvalidInputError } from '@granule/core';
import type { Reply } from '@granule/contracts';
import { CallerVerifier, encodeChunks, errorReply, okReply, parseRequestJson } from '@granule/messaging';
import type { VerifiedIdentity } from '@granule/nats-auth';

/**
 * The context of a Granule NATS request: subject, headers, and who sent it (its signature
 * checked by the transport; undefined when unsigned or not trusted). `authRequired`: the service
 * is on an authenticated NATS, so an endpoint must know its caller (see `CallerGuard`).
 */
export class GranuleNatsContext extends NatsContext {
  constructor(
    subject: string,
    headers: MsgHdrs | undefined,
    readonly caller: VerifiedIdentity | undefined,
    readonly authRequired: boolean,
  ) {
    super([subject, headers]);
  }
}

export interface GranuleNatsServerOptions {
  /** The service's one connection (from `connectNats`); the transport never closes it. */
  connection: NatsConnection;
  /** Subjects are `<prefix>.<pattern>`: a `@MessagePattern('runs.list')` answers on `granule.runs.list`. */
  prefix: string;
  /** Queue group: replicas share the requests. */
  queue: string;
  /** Checks requests' signatures (default: one for `connection`, which knows whether auth is on). */
  verifier?: CallerVerifier;
  /** An internal error answered as INTERNAL, for the service's log. */
  onInternalError?: (pattern: string, err: unknown) => void;
  /** Every answered request: its pattern, the reply's error code (none when ok) and the time it took (metrics). */
  onAnswered?: (pattern: string, code: string | undefined, seconds: number) => void;
}

/**
 * Nest's NATS transport (`@nestjs/microservices`) serving Granule's endpoints: every
 * `@MessagePattern` handler of every service answers on `<prefix>.<pattern>` in its queue group
 * with one envelope (`Reply`: `{ok: true, result}` or `{ok: false, error: {code, message}}`),
 * whatever it returns or throws. It runs on the service's own connection (one connection factory
 * for the whole service), reads plain JSON requests (a malformed or too deep one is refused
 * with INVALID_INPUT, never a crash), and splits a reply larger than NATS' max_payload into
 * chunks the `request` helper puts back together.
 */
export class GranuleNatsServer extends ServerNats {
  private readonly subscriptionsOfOurs: Subscription[] = [];
  private readonly verifier: CallerVerifier;

  constructor(private readonly granule: GranuleNatsServerOptions) {
    super({});
    this.verifier = granule.verifier ?? new CallerVerifier(granule.connection);
  }

  override async createNatsClient(): Promise<NatsConnection> {
    return this.granule.connection;
  }

  // The connection factory reports the connection's state; nothing to watch here.
  override async handleStatusUpdates(): Promise<void> {
    return undefined;
  }

  override bindEvents(client: NatsConnection): void {
    for (const pattern of this.messageHandlers.keys()) {
      const subject = `${this.granule.prefix}.${pattern}`;
      this.subscriptionsOfOurs.push(
        client.subscribe(subject, {
          queue: this.granule.queue,
          callback: (err, msg) => {
            if (err) return this.logger.error(err);
            this.handleMessage(pattern, msg).catch((e: unknown) => this.logger.error(e));
          },
        }),
      );
    }
  }

  /** Stops answering and waits for the subscriptions to drain; the connection stays open (it is the service's). */
  override async close(): Promise<void> {
    await Promise.allSettled(this.subscriptionsOfOurs.map((s) => s.drain()));
    this.subscriptionsOfOurs.length = 0;
  }

  override async handleMessage(pattern: string, msg: Msg): Promise<void> {
    const started = performance.now();
    const respond = (reply: Reply<unknown>): void => {
      this.respond(msg, reply);
      this.granule.onAnswered?.(pattern, reply.ok ? undefined : reply.error.code, (performance.now() - started) / 1000);
    };
    let payload: unknown;
    try {
      payload = parseRequestJson(msg.data, pattern);
    } catch (err) {
      return respond(errorReply(err));
    }
    const caller = this.verifier.identify(msg.subject, msg.data, msg.headers);
    const ctx = new GranuleNatsContext(msg.subject, msg.headers, caller, this.verifier.required);
    const handler = this.getHandlerByPattern(pattern);
    if (!handler)
      return respond(
        errorReply(
          new InvalidInputError([
            { severity: 'error', code: 'UNKNOWN_OPERATION', message: `nothing answers ${msg.subject}` },
          ]),
        ),
      );
    let answered = false;
    await this.handleRequest(
      ctx,
      async () => this.transformToObservable(await handler(payload, ctx)),
      (packet: { response?: unknown; err?: unknown; isDisposed?: boolean }) => {
        if (answered) return;
        if ('err' in packet && packet.err !== undefined) {
          answered = true;
          const reply = errorReply(packet.err);
          if (!reply.ok && reply.error.code === 'INTERNAL') this.granule.onInternalError?.(pattern, packet.err);
          return respond(reply);
        }
        if ('response' in packet || packet.isDisposed) {
          answered = true;
          return respond(okReply(packet.response ?? null));
        }
      },
    );
  }

  /** Publishes the reply, in chunks when it is larger than the server takes in one message. */
  private respond(msg: Msg, reply: Reply<unknown>): void {
    if (!msg.reply) return;
    const limit = this.granule.connection.info?.max_payload ?? 1024 * 1024;
    const chunks = encodeChunks(reply, limit);
    chunks.forEach((chunk, i) => {
      const h = chunks.length > 1 ? natsHeaders() : undefined;
      if (h) {
        h.set('Granule-Chunks', String(chunks.length));
        h.set('Granule-Chunk', String(i + 1));
      }
      // Published on the reply subject (not respond()): a chunked answer is several messages.
      this.granule.connection.publish(msg.reply as string, chunk, h ? { headers: h } : undefined);
    });
  }
}

/**
 * Lets every error a handler throws reach the transport as it is, so its code becomes the
 * reply's (Nest's default filter turns anything unknown into "Internal server error").
 */
@Catch()
export class ReplyExceptionFilter implements RpcExceptionFilter<unknown> {
  catch(exception: unknown, _host: ArgumentsHost): Observable<never> {
    return throwError(() => exception);
  }
}
