import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { decode } from '@nats-io/jwt';
import { fromPublic, fromSeed } from '@nats-io/nkeys';
import type { NatsRole } from '@granule/contracts';
import { splitCreds } from './credentials';
import { NatsAuthError } from './nats-auth.errors';

/**
 * Who sent a message, proved rather than claimed. NATS authenticates a connection but does not
 * stamp its identity on the messages it carries (JetStream keeps none either), so a command's
 * sender signs it with the key of its own credential: the headers carry the sender's user JWT
 * and an ed25519 signature over the subject and payload. A receiver that trusts the same account
 * signing key checks the JWT's issuer and signature, its expiry, then the message's signature.
 * A field the client fills in is never believed.
 */
export const IDENTITY_HEADER = 'Granule-Identity';
export const SIGNATURE_HEADER = 'Granule-Signature';

export interface SignedHeaders {
  [IDENTITY_HEADER]: string;
  [SIGNATURE_HEADER]: string;
}

/** An identity proved by a signed message. */
export interface VerifiedIdentity {
  name: string;
  role?: NatsRole;
  node?: string;
  publicKey: string;
}

/** What a receiver trusts: the issuers (account signing keys) whose user JWTs it accepts. */
export interface TrustedIssuers {
  issuers: string[];
  account: string;
}

const enc = new TextEncoder();

function digest(subject: string, payload: Uint8Array): Uint8Array {
  return createHash('sha256').update(subject).update('\n').update(payload).digest();
}

/*
 * Signing and checking run on every command, dispatch and outcome, so they use Node's own
 * ed25519 (OpenSSL) rather than @nats-io/nkeys' pure-JavaScript one, which costs milliseconds
 * per operation (about 300 times more; the orchestrator benchmark showed it). nkeys still checks
 * each key's encoding once (prefix and CRC); the raw key bytes then become a KeyObject, cached.
 * The signatures are the same bytes: ed25519 is deterministic.
 */
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
/** DER prefixes that wrap a raw 32-byte ed25519 seed (PKCS#8) or public key (SPKI). */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');
/** Keys and verified JWTs kept per process; beyond this many the oldest go (a fleet's agents fit). */
const CACHE_LIMIT = 20_000;

function base32Decode(text: string): Buffer {
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of text) {
    const v = BASE32.indexOf(ch);
    if (v < 0) throw new NatsAuthError('CREDENTIALS_INVALID', 'a key is not base32');
    value = (value << 5) | v;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

function remember<V>(cache: Map<string, V>, key: string, make: () => V): V {
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const made = make();
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  cache.set(key, made);
  return made;
}

const privateKeys = new Map<string, KeyObject>();
const publicKeys = new Map<string, KeyObject>();
/** Claims of JWTs that decoded (decode() also checks their issuer's signature). */
const decodedJwts = new Map<string, ReturnType<typeof decode<{ issuer_account?: string; tags?: string[] }>>>();
/** JWTs whose issuer signature held: the signature never changes, so it is checked once. */
const issuerChecked = new Map<string, true>();

/** The signing key of an nkey seed (`SU…`: two prefix bytes, 32 raw bytes, a CRC). */
function privateKeyOf(seed: string): KeyObject {
  return remember(privateKeys, seed, () => {
    fromSeed(enc.encode(seed)); // throws on a bad prefix or CRC
    const raw = base32Decode(seed).subarray(2, 34);
    return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, raw]), format: 'der', type: 'pkcs8' });
  });
}

/** The key of a public nkey (`U…`, `A…`: one prefix byte, 32 raw bytes, a CRC). */
function publicKeyOf(nkey: string): KeyObject {
  return remember(publicKeys, nkey, () => {
    fromPublic(nkey); // throws on a bad prefix or CRC
    const raw = base32Decode(nkey).subarray(1, 33);
    return createPublicKey({ key: Buffer.concat([SPKI_ED25519, raw]), format: 'der', type: 'spki' });
  });
}

function verifies(nkey: string, data: Uint8Array, signature: Uint8Array): boolean {
  try {
    return verify(null, data, publicKeyOf(nkey), signature);
  } catch {
    return false;
  }
}

/** Signs `payload` for `subject` with the credential's key (the `.creds` file's text). */
export function signMessage(creds: string, subject: string, payload: Uint8Array): SignedHeaders {
  const parts = splitCreds(creds);
  if (!parts) throw new NatsAuthError('CREDENTIALS_INVALID', 'the credentials hold no user JWT and seed to sign with');
  const { jwt, seed } = parts;
  return {
    [IDENTITY_HEADER]: jwt,
    [SIGNATURE_HEADER]: sign(null, digest(subject, payload), privateKeyOf(seed)).toString('base64url'),
  };
}

/** The issuers a service trusts: the signer and account of its own credential. */
export function issuersOf(creds: string): TrustedIssuers {
  const jwt = splitCreds(creds)?.jwt;
  if (!jwt) throw new NatsAuthError('CREDENTIALS_INVALID', 'the credentials hold no user JWT');
  const claims = decode<{ issuer_account?: string }>(jwt);
  return { issuers: [claims.iss], account: claims.nats.issuer_account ?? claims.iss };
}

/**
 * Checks a signed message and returns who sent it; throws `NatsAuthError`
 * (`IDENTITY_INVALID`) saying what did not hold, without echoing the token.
 */
export function verifyMessage(
  headers: { get(name: string): string | undefined },
  subject: string,
  payload: Uint8Array,
  trust: TrustedIssuers,
  now = new Date(),
): VerifiedIdentity {
  const jwt = headers.get(IDENTITY_HEADER);
  const sig = headers.get(SIGNATURE_HEADER);
  const refuse = (why: string): never => {
    throw new NatsAuthError('IDENTITY_INVALID', `the message on ${subject} is not signed by a known identity: ${why}`);
  };
  if (!jwt || !sig) return refuse(`it has no ${IDENTITY_HEADER} and ${SIGNATURE_HEADER} headers`);
  const parts = jwt.split('.');
  if (parts.length !== 3) return refuse('its identity is not a JWT');
  let claims: ReturnType<typeof decode<{ issuer_account?: string; tags?: string[] }>>;
  try {
    // decode() checks the JWT's signature with nkeys' JavaScript ed25519: once per JWT.
    claims = remember(decodedJwts, jwt, () => decode<{ issuer_account?: string; tags?: string[] }>(jwt));
  } catch {
    return refuse('its identity cannot be decoded');
  }
  if (!trust.issuers.includes(claims.iss)) return refuse(`its identity '${claims.name}' was issued by an unknown key`);
  if ((claims.nats.issuer_account ?? claims.iss) !== trust.account)
    return refuse(`its identity '${claims.name}' belongs to another account`);
  const issuerSigned =
    issuerChecked.has(jwt) ||
    (verifies(claims.iss, enc.encode(`${parts[0]}.${parts[1]}`), Buffer.from(parts[2], 'base64url')) &&
      remember(issuerChecked, jwt, () => true));
  if (!issuerSigned) return refuse(`the identity '${claims.name}' does not carry its issuer's signature`);
  if (claims.exp && claims.exp * 1000 <= now.getTime()) return refuse(`the identity '${claims.name}' has expired`);
  const signed = verifies(claims.sub, digest(subject, payload), Buffer.from(sig, 'base64url'));
  if (!signed) return refuse(`the signature does not match the message for '${claims.name}'`);
  const tags = claims.nats.tags ?? [];
  const tag = (name: string): string | undefined => tags.find((t) => t.startsWith(`${name}:`))?.slice(name.length + 1);
  return {
    name: claims.name,
    role: tag('role') as NatsRole | undefined,
    node: tag('node'),
    publicKey: claims.sub,
  };
}
