import { createInbox } from '@nats-io/transport-node';
import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import { GranuleError } from '@granule/core';
import type { Reply } from '@granule/contracts';
import {
  NatsPermissionError,
  onPermissionViolation,
  permissionRefused,
  permissionViolationIn,
} from './nats-permission-errors';
import { isReply, unwrapReply } from './nats-reply';

/** Who is asked, for messages and codes: `config-store`, how to start it, the code prefix. */
export interface ServiceRef {
  /** `config-store`, `graph-planner`, `orchestrator`. */
  name: string;
  /** First part of the codes of a failed request: `CONFIG_STORE` gives CONFIG_STORE_UNAVAILABLE. */
  code: string;
  /** What the operator does when nobody answers: `start it with npm run start:config-store`. */
  hint: string;
}

/** The services that answer requests on NATS. */
export const SERVICES = {
  configStore: { name: 'config-store', code: 'CONFIG_STORE', hint: 'start it with npm run start:config-store' },
  planner: { name: 'graph-planner', code: 'PLANNER', hint: 'start it with npm run start:graph-planner' },
  orchestrator: { name: 'orchestrator', code: 'ORCHESTRATOR', hint: 'start it with npm run start:orchestrator' },
} as const satisfies Record<string, ServiceRef>;

/** `<SERVICE>_UNAVAILABLE` (nobody listens), `_TIMEOUT` (nobody answered in time), `_BAD_REPLY` (not an envelope). */
export type ServiceUnavailableCode = `${string}_${'UNAVAILABLE' | 'TIMEOUT' | 'BAD_REPLY'}`;

/** Nobody answered, nobody answered in time, or the answer is not a reply envelope. */
export class ServiceUnavailableError extends GranuleError<ServiceUnavailableCode> {
  constructor(
    code: ServiceUnavailableCode,
    readonly service: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }

  /** Nobody listens (no responders): the service is away, not slow. */
  get away(): boolean {
    return this.code.endsWith('_UNAVAILABLE');
  }
}

export interface RequestOptions {
  timeoutMs?: number;
  /** Headers to send (a signed request's identity). */
  headers?: MsgHdrs;
}

/**
 * Adds headers to an outgoing request or command (a credential's signature, see nats-auth).
 * Set once per connection by whoever holds a signing credential.
 */
export type RequestSigner = (subject: string, payload: Uint8Array) => MsgHdrs | undefined;

const signers = new WeakMap<NatsConnection, RequestSigner>();

/** Every request and command sent on `nc` from now on carries the signer's headers. */
export function signRequestsOn(nc: NatsConnection, signer: RequestSigner): void {
  signers.set(nc, signer);
}

/** The headers the connection's signer gives a message (none without a signer). */
export function signatureHeaders(nc: NatsConnection, subject: string, payload: Uint8Array): MsgHdrs | undefined {
  return signers.get(nc)?.(subject, payload);
}

const encoder = new TextEncoder();

/**
 * Asks a service on NATS (core request/reply) and returns the result of its reply envelope.
 * A refusal is thrown with the reply's code (`InvalidInputError` with every finding for
 * invalid input, `RemoteError` otherwise); no answer is `ServiceUnavailableError` naming the
 * service, the subject and what to do.
 */
export async function request<T>(
  nc: NatsConnection,
  service: ServiceRef,
  subject: string,
  payload: unknown,
  options: RequestOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 15_000;
  const data = encoder.encode(JSON.stringify(payload ?? {}));
  const headers = options.headers ?? signatureHeaders(nc, subject, data);
  let text: string;
  try {
    text = await exchange(nc, subject, data, timeoutMs, headers);
  } catch (err) {
    if (err instanceof NoAnswer)
      throw new ServiceUnavailableError(
        `${service.code}_${err.timedOut ? 'TIMEOUT' : 'UNAVAILABLE'}`,
        service.name,
        err.timedOut
          ? `${service.name} did not answer on ${subject} within ${timeoutMs / 1000} s: is it running and connected to the same NATS? (${service.hint})`
          : `${service.name} did not answer on ${subject}: ${service.hint}`,
        { cause: err },
      );
    throw err;
  }
  let reply: unknown;
  try {
    reply = JSON.parse(text);
  } catch {
    reply = undefined;
  }
  if (!isReply(reply))
    throw new ServiceUnavailableError(
      `${service.code}_BAD_REPLY`,
      service.name,
      `the answer of ${service.name} on ${subject} is not a reply envelope: ${text.slice(0, 200)}`,
    );
  return unwrapReply(reply as Reply<T>);
}

class NoAnswer extends Error {
  constructor(readonly timedOut: boolean) {
    super(timedOut ? 'timed out' : 'no responders');
  }
}

/**
 * One request and its answer, which may come in several messages (`Granule-Chunks`, see
 * GranuleNatsServer): a reply inbox of its own under the connection's inbox prefix (an
 * identity may read only its own inboxes), the request, then every chunk in order.
 */
async function exchange(
  nc: NatsConnection,
  subject: string,
  data: Uint8Array,
  timeoutMs: number,
  headers: MsgHdrs | undefined,
): Promise<string> {
  const inbox = createInbox((nc as { options?: { inboxPrefix?: string } }).options?.inboxPrefix);
  const sub = nc.subscribe(inbox);
  const timer = setTimeout(() => sub.unsubscribe(), timeoutMs);
  let timedOut = true;
  let refused: NatsPermissionError | undefined;
  // A publish NATS refuses is reported on the connection only: stop waiting for an answer then.
  const stopWatching = onPermissionViolation(nc, (err) => {
    if (err.subject !== subject && err.subject !== inbox) return;
    refused = permissionRefused(nc, err.operation, err.subject, err);
    sub.unsubscribe();
  });
  const parts: Uint8Array[] = [];
  let expected = 1;
  try {
    nc.publish(subject, data, { reply: inbox, ...(headers ? { headers } : {}) });
    for await (const msg of sub) {
      if (msg.headers?.hasError && msg.headers.code === 503) {
        timedOut = false;
        break;
      }
      const count = Number(msg.headers?.get('Granule-Chunks') || 1);
      const index = Number(msg.headers?.get('Granule-Chunk') || 1);
      expected = count;
      parts[index - 1] = msg.data;
      if (parts.filter(Boolean).length === expected) {
        sub.unsubscribe();
        const whole = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
        let at = 0;
        for (const p of parts) {
          whole.set(p, at);
          at += p.length;
        }
        return new TextDecoder().decode(whole);
      }
    }
  } catch (err) {
    const violation = permissionViolationIn(err);
    if (!violation) throw err;
    refused ??= permissionRefused(nc, violation.operation, violation.subject, err);
  } finally {
    clearTimeout(timer);
    stopWatching();
    sub.unsubscribe();
  }
  if (refused) throw refused;
  throw new NoAnswer(timedOut);
}
