import type { CredentialState, NodeCredentialView } from '@granule/contracts';

/** What a recorded credential says about itself: when it was issued, expires, was revoked. */
export interface CredentialTimes {
  issuedAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

/** A revocation wins over an expiry; a credential expires at its `exp` second (NATS's rule). */
export function credentialStateAt(c: CredentialTimes, now: Date): CredentialState {
  if (c.revokedAt) return 'revoked';
  if (c.expiresAt && c.expiresAt.getTime() <= now.getTime()) return 'expired';
  return 'active';
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/**
 * A node's agent credential from every one recorded for it: `active` while any of them may
 * still connect (a newer key does not shut out an older one that was never revoked), with the
 * latest expiry among the active ones (null when one never expires); otherwise the newest
 * one's state. Null when none is recorded.
 */
export function nodeCredentialAt(credentials: readonly CredentialTimes[], now: Date): NodeCredentialView | null {
  if (credentials.length === 0) return null;
  const active = credentials.filter((c) => credentialStateAt(c, now) === 'active');
  if (active.length > 0) {
    const expiries = active.map((c) => c.expiresAt);
    const never = expiries.some((e) => e === null);
    const latest = never ? null : new Date(Math.max(...expiries.map((e) => (e as Date).getTime())));
    return { state: 'active', expires_at: iso(latest), revoked_at: null };
  }
  const newest = credentials.reduce((a, b) => (b.issuedAt.getTime() > a.issuedAt.getTime() ? b : a));
  return {
    state: credentialStateAt(newest, now),
    expires_at: iso(newest.expiresAt),
    revoked_at: iso(newest.revokedAt),
  };
}
