import { errors } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { GranuleError } from '@granule/core';
import { identityOf } from './nats-connection';

/** NATS refused to let this connection's identity publish or subscribe somewhere. */
export class NatsPermissionError extends GranuleError<'FORBIDDEN'> {
  constructor(
    readonly operation: string,
    readonly subject: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super('FORBIDDEN', message, options);
  }
}

/**
 * The refusal, in words an operator acts on: who was refused, what, and why (the credential's
 * role does not allow it; another identity, or `granule auth issue` with another role, may).
 */
export function permissionRefused(
  nc: NatsConnection,
  operation: string,
  subject: string,
  cause?: unknown,
): NatsPermissionError {
  const who = identityOf(nc);
  const name = who ? `'${who.identity}'${who.role ? ` (role ${who.role})` : ''}` : 'this connection';
  return new NatsPermissionError(
    operation,
    subject,
    `NATS refused to let ${name} ${operation === 'subscription' ? 'subscribe to' : 'publish to'} ${subject}: its credential does not allow it; use an identity whose role may`,
    { cause },
  );
}

type PermissionViolation = InstanceType<typeof errors.PermissionViolationError>;

/**
 * NATS's permissions violation (a `-ERR` the server sent for a publish or a subscription) in
 * `err` or its cause (JetStream calls wrap it in a `RequestError`), or undefined.
 */
export function permissionViolationIn(err: unknown): PermissionViolation | undefined {
  if (err instanceof errors.PermissionViolationError) return err;
  const cause = (err as { cause?: unknown } | undefined)?.cause;
  return cause instanceof errors.PermissionViolationError ? cause : undefined;
}

type Listener = (err: PermissionViolation) => void;
const listeners = new WeakMap<NatsConnection, Set<Listener>>();

/**
 * Calls `listener` with each permissions violation the server reports on `nc` until the returned
 * function is called. A refused plain publish has no reply to fail: NATS reports it only on the
 * connection's status, and a request waiting for an answer would otherwise wait out its timeout.
 */
export function onPermissionViolation(nc: NatsConnection, listener: Listener): () => void {
  let set = listeners.get(nc);
  if (!set) {
    const created = new Set<Listener>();
    set = created;
    listeners.set(nc, created);
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'error' && s.error instanceof errors.PermissionViolationError)
          for (const l of [...created]) l(s.error);
      }
    })().catch(() => undefined);
  }
  set.add(listener);
  return () => set.delete(listener);
}
