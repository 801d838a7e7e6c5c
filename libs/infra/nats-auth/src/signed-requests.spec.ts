import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { encodeUser, fmtCreds } from '@nats-io/jwt';
import { createAccount, createUser, fromPublic } from '@nats-io/nkeys';
import { IDENTITY_HEADER, SIGNATURE_HEADER, issuersOf, signMessage, verifyMessage } from './signed-requests';
import { TrustStore } from './trust-store';

let dir: string;
let store: TrustStore;
let alice: string;
let orchestrator: string;
const SUBJECT = 'granule.cmd.deployment.start';
const payload = new TextEncoder().encode('{"runId":"r1"}');
const headersOf = (h: Record<string, string>) => ({ get: (name: string) => h[name] });

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'granule-signed-'));
  store = await TrustStore.create(path.join(dir, 'keys'));
  alice = (await store.issue({ name: 'alice', role: 'operator' })).creds;
  orchestrator = (await store.issue({ name: 'orchestrator', role: 'orchestrator' })).creds;
}, 30_000); // a trust store's keys and files: seconds on a busy machine
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('signed messages', () => {
  it("names the sender from its credential, checked against the receiver's own issuer", () => {
    const signed = signMessage(alice, SUBJECT, payload);
    expect(verifyMessage(headersOf({ ...signed }), SUBJECT, payload, issuersOf(orchestrator))).toMatchObject({
      name: 'alice',
      role: 'operator',
    });
  });

  it("signs with the credential's own ed25519 key: nkeys checks the signature as NATS would", () => {
    const signed = signMessage(alice, SUBJECT, payload);
    const digest = createHash('sha256').update(SUBJECT).update('\n').update(payload).digest();
    const user = fromPublic(
      verifyMessage(headersOf({ ...signed }), SUBJECT, payload, issuersOf(orchestrator)).publicKey,
    );
    expect(user.verify(digest, Buffer.from(signed['Granule-Signature'], 'base64url'))).toBe(true);
    expect(user.verify(Buffer.alloc(32), Buffer.from(signed['Granule-Signature'], 'base64url'))).toBe(false);
  });

  it('refuses an unsigned message', () => {
    expect(() => verifyMessage(headersOf({}), SUBJECT, payload, issuersOf(orchestrator))).toThrow(
      /not signed by a known identity: it has no Granule-Identity and Granule-Signature headers/,
    );
  });

  it('refuses a payload changed after signing, and a signature moved to another subject', () => {
    const signed = signMessage(alice, SUBJECT, payload);
    const changed = new TextEncoder().encode('{"runId":"r2"}');
    expect(() => verifyMessage(headersOf({ ...signed }), SUBJECT, changed, issuersOf(orchestrator))).toThrow(
      /signature does not match the message for 'alice'/,
    );
    expect(() =>
      verifyMessage(headersOf({ ...signed }), 'granule.cmd.deployment.stop', payload, issuersOf(orchestrator)),
    ).toThrow(/signature does not match/);
  });

  it('refuses a name claimed with a JWT of another trust store, even when self-consistent', async () => {
    const other = await TrustStore.create(path.join(dir, 'other'));
    const mallory = (await other.issue({ name: 'alice', role: 'admin' })).creds;
    const signed = signMessage(mallory, SUBJECT, payload);
    expect(() => verifyMessage(headersOf({ ...signed }), SUBJECT, payload, issuersOf(orchestrator))).toThrow(
      /identity 'alice' was issued by an unknown key/,
    );
  }, 30_000); // a second trust store: seconds on a busy machine

  it("refuses a JWT whose claims were edited (the issuer's signature no longer holds)", () => {
    const signed = signMessage(alice, SUBJECT, payload);
    const [h, body, sig] = signed[IDENTITY_HEADER].split('.');
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString()) as { name: string };
    claims.name = 'root';
    const forged = [h, Buffer.from(JSON.stringify(claims)).toString('base64url'), sig].join('.');
    expect(() =>
      verifyMessage(
        headersOf({ [IDENTITY_HEADER]: forged, [SIGNATURE_HEADER]: signed[SIGNATURE_HEADER] }),
        SUBJECT,
        payload,
        issuersOf(orchestrator),
      ),
    ).toThrow(
      /not signed by a known identity: (its identity cannot be decoded|the identity 'root' does not carry its issuer's signature)/,
    );
  });

  it('refuses an expired identity', async () => {
    const short = (await store.issue({ name: 'temp', role: 'operator', ttlSeconds: 60 })).creds;
    const signed = signMessage(short, SUBJECT, payload);
    expect(() =>
      verifyMessage(
        headersOf({ ...signed }),
        SUBJECT,
        payload,
        issuersOf(orchestrator),
        new Date(Date.now() + 120_000),
      ),
    ).toThrow(/identity 'temp' has expired/);
  });

  it('refuses a user signed by a key that is not an issuer the receiver trusts', async () => {
    const rogueSigner = createAccount();
    const user = createUser();
    const jwt = await encodeUser('eve', user, rogueSigner, { issuer_account: issuersOf(orchestrator).account });
    const creds = new TextDecoder().decode(fmtCreds(jwt, user));
    expect(() =>
      verifyMessage(headersOf({ ...signMessage(creds, SUBJECT, payload) }), SUBJECT, payload, issuersOf(orchestrator)),
    ).toThrow(/identity 'eve' was issued by an unknown key/);
  });
});
