import { credentialCell } from './node.command';

describe('credentialCell - the credential column of granule node list', () => {
  it('active with its expiry day, or without one; revoked and expired with their day; - for none', () => {
    expect(credentialCell({ state: 'active', expires_at: '2027-11-25T09:30:00.000Z', revoked_at: null })).toBe(
      'active (expires 2027-11-25)',
    );
    expect(credentialCell({ state: 'active', expires_at: null, revoked_at: null })).toBe('active');
    expect(
      credentialCell({
        state: 'revoked',
        expires_at: '2027-11-25T09:30:00.000Z',
        revoked_at: '2026-11-25T10:00:00.000Z',
      }),
    ).toBe('revoked 2026-11-25');
    expect(credentialCell({ state: 'expired', expires_at: '2026-11-20T23:59:59.000Z', revoked_at: null })).toBe(
      'expired 2026-11-20',
    );
    expect(credentialCell(null)).toBe('-');
    // A config-store older than the column sends no credential at all.
    expect(credentialCell(undefined)).toBe('-');
  });
});
