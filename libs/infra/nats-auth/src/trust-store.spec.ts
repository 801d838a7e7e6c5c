import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decode } from '@nats-io/jwt';
import { splitCreds } from './credentials';
import { TrustStore } from './trust-store';

describe('TrustStore.issueAll', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'granule-trust-unit-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('issues and records many credentials at once; each JWT verifies against the account signing key', async () => {
    const store = await TrustStore.create(path.join(dir, 'auth'), { prefix: 'fleet' });
    const issued = await store.issueAll(
      Array.from({ length: 50 }, (_, i) => ({ name: `agent-n${i}`, role: 'agent' as const, node: `n${i}` })),
    );
    expect(store.identities().map((i) => i.node)).toEqual(issued.map((_, i) => `n${i}`));
    for (const { identity, creds } of issued) {
      // decode() checks the signature (tweetnacl), independently of the signer that made it.
      const claims = decode<{ tags: string[] }>(splitCreds(creds)?.jwt ?? '');
      expect(claims.sub).toBe(identity.publicKey);
      expect(claims.nats.tags).toEqual(['role:agent', `node:${identity.node}`]);
      expect(new Date(claims.iat * 1000).toISOString()).toBe(identity.issuedAt);
    }
  });

  it('checks every request before issuing any', async () => {
    const store = await TrustStore.create(path.join(dir, 'auth'));
    await expect(
      store.issueAll([
        { name: 'fine', role: 'operator' },
        { name: 'agent-x', role: 'agent' },
      ]),
    ).rejects.toThrow('an agent credential is bound to a node: give the node uid');
    expect(store.identities()).toEqual([]);
  });
});
