import { readFileSync } from 'node:fs';
import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import { GranuleError } from '@granule/core';
import type { NatsRole } from '@granule/contracts';
import { issuersOf, verifyMessage } from '@granule/nats-auth';
import type { TrustedIssuers, VerifiedIdentity } from '@granule/nats-auth';
import { identityOf } from './nats-connection';

export class CallerRefusedError extends GranuleError<'UNAUTHENTICATED' | 'FORBIDDEN'> {}

/** Who sent a message, as the event log and the audit record it. */
export interface Caller {
  name: string;
  role?: NatsRole;
  node?: string;
  /** False on a NATS without authentication: the name is then not proved. */
  authenticated: boolean;
}

/** The caller recorded on a NATS without authentication (nobody can be told apart there). */
export const ANONYMOUS: Caller = { name: 'anonymous', authenticated: false };

/**
 * Tells who sent a message from its signature (nats-auth's `verifyMessage`), never from a field
 * the client fills in. A process with a credential of its own is on an authenticated NATS: every
 * request and command must be signed by an identity of the same account and carry a role the
 * action allows. Without one (a development NATS with no auth) every caller is `anonymous`.
 */
export class CallerVerifier {
  private readonly trust?: TrustedIssuers;

  constructor(nats: NatsConnection) {
    const own = identityOf(nats);
    if (own) this.trust = issuersOf(readFileSync(own.file, 'utf8'));
  }

  /** True when callers must prove who they are. */
  get required(): boolean {
    return this.trust !== undefined;
  }

  /** The signed identity of a message, or undefined when it is unsigned or not trusted (the reason is thrown by `of`). */
  identify(subject: string, data: Uint8Array, headers: MsgHdrs | undefined): VerifiedIdentity | undefined {
    if (!this.trust) return undefined;
    try {
      return verifyMessage({ get: (k) => headers?.get(k) || undefined }, subject, data, this.trust);
    } catch {
      return undefined;
    }
  }

  /** The caller of a signed message, refused (`UNAUTHENTICATED` / `FORBIDDEN`) when it may not do `action`. */
  of(
    subject: string,
    data: Uint8Array,
    headers: MsgHdrs | undefined,
    allowed: readonly NatsRole[],
    action: string,
  ): Caller {
    if (!this.trust) return ANONYMOUS;
    let who: VerifiedIdentity;
    try {
      who = verifyMessage({ get: (k) => headers?.get(k) || undefined }, subject, data, this.trust);
    } catch (err) {
      throw new CallerRefusedError('UNAUTHENTICATED', `${action} refused: ${(err as Error).message}`, { cause: err });
    }
    return allowedCaller(who, allowed, action);
  }
}

/** `who` as a caller when its role is one of `allowed`; `FORBIDDEN` naming the role it needs otherwise. */
export function allowedCaller(who: VerifiedIdentity, allowed: readonly NatsRole[], action: string): Caller {
  if (!who.role || !allowed.includes(who.role))
    throw new CallerRefusedError(
      'FORBIDDEN',
      `${action} refused: '${who.name}' has the role ${who.role ?? '(none)'}; it needs ${allowed.join(' or ')}`,
    );
  return { name: who.name, role: who.role, ...(who.node ? { node: who.node } : {}), authenticated: true };
}
