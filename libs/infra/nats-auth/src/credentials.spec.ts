import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readCredentials } from './credentials';
import { TrustStore } from './trust-store';

let dir: string;
let store: TrustStore;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'granule-creds-'));
  store = await TrustStore.create(path.join(dir, 'keys'));
}, 30_000); // a trust store's keys and files: seconds on a busy machine
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('readCredentials', () => {
  it('reads the identity, role, node and inbox of an agent credential', async () => {
    const { creds, identity } = await store.issue({ name: 'node-7', role: 'agent', node: '7', ttlSeconds: 3600 });
    const file = path.join(dir, 'agent.creds');
    writeFileSync(file, creds);
    const read = readCredentials(file);
    expect(read).toMatchObject({ identity: 'node-7', role: 'agent', node: '7', inboxPrefix: '_INBOX_node-7' });
    expect(read.publicKey).toBe(identity.publicKey);
    expect(read.expiresAt?.toISOString()).toBe(identity.expiresAt);
  });

  it('names a missing file without a stack trace', () => {
    expect(() => readCredentials(path.join(dir, 'nope.creds'))).toThrow(
      `cannot read the NATS credentials file ${path.join(dir, 'nope.creds')}: no such file`,
    );
  });

  it('refuses a file that is not a credentials file, and never prints its content', () => {
    const file = path.join(dir, 'secret.txt');
    writeFileSync(file, 'password=hunter2\n');
    let message = '';
    try {
      readCredentials(file);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe(`${file} is not a NATS credentials file: expected a user JWT block and a user seed block`);
    expect(message).not.toContain('hunter2');
  });

  it('refuses an expired credential before connecting, saying how to get a new one', async () => {
    const { creds } = await store.issue({ name: 'old', role: 'viewer', ttlSeconds: 60 });
    const file = path.join(dir, 'old.creds');
    writeFileSync(file, creds);
    expect(() => readCredentials(file, new Date(Date.now() + 120_000))).toThrow(
      /identity 'old'\) expired at .*ask for new ones/,
    );
  });
});

describe('TrustStore', () => {
  it('refuses to replace an existing store', async () => {
    await expect(TrustStore.create(path.join(dir, 'keys'))).rejects.toThrow(/already holds a trust store/);
  });

  it('keeps its keys readable by the owner only', async () => {
    const { statSync } = await import('node:fs');
    expect(statSync(path.join(dir, 'keys')).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(dir, 'keys', 'operator.nk')).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(dir, 'keys', 'account-signing.nk')).mode & 0o777).toBe(0o600);
  });

  it('refuses an agent credential without a node and names that are not subject tokens', async () => {
    await expect(store.issue({ name: 'n', role: 'agent' })).rejects.toThrow(/bound to a node/);
    await expect(store.issue({ name: 'a.b', role: 'viewer' })).rejects.toThrow(/identity name 'a.b' is not allowed/);
    await expect(store.issue({ name: 'x', role: 'root' as never })).rejects.toThrow(/unknown role 'root'/);
  });

  it('revoking an unknown identity says so', async () => {
    await expect(store.revoke('ghost')).rejects.toThrow(
      `no credential was issued to 'ghost' in ${path.join(dir, 'keys')}`,
    );
  });
});
