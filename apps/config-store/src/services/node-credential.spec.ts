import { credentialStateAt, nodeCredentialAt, type CredentialTimes } from './node-credential';

const at = (iso: string): Date => new Date(iso);
const NOW = at('2026-11-25T12:00:00Z');

const credential = (issued: string, expires: string | null, revoked: string | null = null): CredentialTimes => ({
  issuedAt: at(issued),
  expiresAt: expires ? at(expires) : null,
  revokedAt: revoked ? at(revoked) : null,
});

describe('credentialStateAt', () => {
  it('expired from the expiry second on; a revocation wins over an expiry', () => {
    const c = credential('2026-11-25T11:00:00Z', '2026-11-25T12:00:00Z');
    expect(credentialStateAt(c, at('2026-11-25T11:59:59.999Z'))).toBe('active');
    expect(credentialStateAt(c, NOW)).toBe('expired');
    expect(credentialStateAt({ ...c, revokedAt: at('2026-11-25T11:30:00Z') }, NOW)).toBe('revoked');
    expect(credentialStateAt(credential('2026-11-25T11:00:00Z', null), at('2999-01-01T00:00:00Z'))).toBe('active');
  });
});

describe('nodeCredentialAt', () => {
  it('none recorded - null', () => {
    expect(nodeCredentialAt([], NOW)).toBeNull();
  });

  it('one active - its expiry; one revoked - its revocation; one lapsed - expired with its expiry', () => {
    expect(nodeCredentialAt([credential('2026-11-01T00:00:00Z', '2027-11-01T00:00:00Z')], NOW)).toEqual({
      state: 'active',
      expires_at: '2027-11-01T00:00:00.000Z',
      revoked_at: null,
    });
    expect(
      nodeCredentialAt([credential('2026-11-01T00:00:00Z', '2027-11-01T00:00:00Z', '2026-11-20T08:00:00Z')], NOW),
    ).toEqual({ state: 'revoked', expires_at: '2027-11-01T00:00:00.000Z', revoked_at: '2026-11-20T08:00:00.000Z' });
    expect(nodeCredentialAt([credential('2026-11-01T00:00:00Z', '2026-11-20T00:00:00Z')], NOW)).toEqual({
      state: 'expired',
      expires_at: '2026-11-20T00:00:00.000Z',
      revoked_at: null,
    });
  });

  it('an older credential still active keeps the node active after a newer one lapsed - NATS still lets it in', () => {
    const older = credential('2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z');
    const newer = credential('2026-11-25T11:00:00Z', '2026-11-25T11:00:01Z');
    expect(nodeCredentialAt([older, newer], NOW)).toEqual({
      state: 'active',
      expires_at: '2027-01-01T00:00:00.000Z',
      revoked_at: null,
    });
  });

  it('several active - the latest expiry, none when one never expires', () => {
    const a = credential('2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z');
    const b = credential('2026-02-01T00:00:00Z', '2027-06-01T00:00:00Z');
    expect(nodeCredentialAt([b, a], NOW)?.expires_at).toBe('2027-06-01T00:00:00.000Z');
    expect(nodeCredentialAt([a, credential('2026-03-01T00:00:00Z', null)], NOW)?.expires_at).toBeNull();
  });

  it('none active - the newest one tells: re-enrolled then lapsed reads expired, not the old revocation', () => {
    const revoked = credential('2026-01-01T00:00:00Z', '2027-01-01T00:00:00Z', '2026-06-01T00:00:00Z');
    const lapsed = credential('2026-11-25T11:00:00Z', '2026-11-25T11:00:01Z');
    expect(nodeCredentialAt([lapsed, revoked], NOW)?.state).toBe('expired');
    expect(nodeCredentialAt([revoked], NOW)?.state).toBe('revoked');
  });
});
