import { missingPrivilege } from './netns';

// The multi-host tier skips with a reason that tells a user without privilege what to do,
// rather than "the kernel refused" (the kernel refuses because of the missing capability).
describe('missingPrivilege', () => {
  const status = (capEff: string): string => `Name:\tnode\nUid:\t1000\t1000\t1000\t1000\nCapEff:\t${capEff}\n`;

  it('root with every capability: nothing missing', () => {
    expect(missingPrivilege(status('000001fffeffffff'), 0)).toBeUndefined();
  });

  it('an ordinary user: says to run as root and names both capabilities', () => {
    expect(missingPrivilege(status('0000000000000000'), 1000)).toBe(
      'the multi-host tier needs root (or CAP_SYS_ADMIN and CAP_NET_ADMIN) to create namespaces, links and ' +
        'mounts; this process runs as uid 1000 without CAP_SYS_ADMIN and CAP_NET_ADMIN: run it as root ' +
        '(sudo npm run test:fleet)',
    );
  });

  it('only CAP_NET_ADMIN (bit 12): names CAP_SYS_ADMIN alone', () => {
    expect(missingPrivilege(status('0000000000001000'), 1000)).toMatch(/without CAP_SYS_ADMIN: run it as root/);
  });

  it('only CAP_SYS_ADMIN (bit 21): names CAP_NET_ADMIN alone', () => {
    expect(missingPrivilege(status('0000000000200000'), 0)).toMatch(/uid 0 without CAP_NET_ADMIN: run it as root/);
  });
});
