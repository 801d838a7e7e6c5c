import { formatLeaseHolder, newLeaseHolder, parseLeaseHolder } from './run-lease.adapter';

describe('lease holder names', () => {
  it('a holder is its replica and incarnation; the name parses back, dots and all', () => {
    const h = { replica: 'orchestrator-7f9c.example', incarnation: '0a1b2c' };
    expect(formatLeaseHolder(h)).toBe('orchestrator-7f9c.example#0a1b2c');
    expect(parseLeaseHolder(formatLeaseHolder(h))).toEqual(h);
  });

  it('a value without a replica or an incarnation names no holder (an older release wrote the bare name)', () => {
    expect(['plain', '#x', 'x#', ''].map(parseLeaseHolder)).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('every start of one replica is a new incarnation', () => {
    const [a, b] = [newLeaseHolder('orch'), newLeaseHolder('orch')];
    expect([a.replica, b.replica]).toEqual(['orch', 'orch']);
    expect(a.incarnation).toMatch(/^[0-9a-f]{16}$/);
    expect(a.incarnation).not.toBe(b.incarnation);
  });
});
