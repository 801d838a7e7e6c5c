import { createHash } from 'node:crypto';
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

/** Signs `payload` for `subject` with the credential's key (the `.creds` file's text). */
export function signMessage(creds: string, subject: string, payload: Uint8Array): SignedHeaders {
  const parts = splitCreds(creds);
  if (!parts) throw new NatsAuthError('CREDENTIALS_INVALID', 'the credentials hold no user JWT and seed to sign with');
  const { jwt, seed } = parts;
  const key = fromSeed(enc.encode(seed));
  return {
    [IDENTITY_HEADER]: jwt,
    [SIGNATURE_HEADER]: Buffer.from(key.sign(digest(subject, payload))).toString('base64url'),
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
    claims = decode<{ issuer_account?: string; tags?: string[] }>(jwt);
  } catch {
    return refuse('its identity cannot be decoded');
  }
  if (!trust.issuers.includes(claims.iss)) return refuse(`its identity '${claims.name}' was issued by an unknown key`);
  if ((claims.nats.issuer_account ?? claims.iss) !== trust.account)
    return refuse(`its identity '${claims.name}' belongs to another account`);
  let issuerSigned = false;
  try {
    issuerSigned = fromPublic(claims.iss).verify(
      enc.encode(`${parts[0]}.${parts[1]}`),
      Buffer.from(parts[2], 'base64url'),
    );
  } catch {
    issuerSigned = false;
  }
  if (!issuerSigned) return refuse(`the identity '${claims.name}' does not carry its issuer's signature`);
  if (claims.exp && claims.exp * 1000 <= now.getTime()) return refuse(`the identity '${claims.name}' has expired`);
  let signed = false;
  try {
    signed = fromPublic(claims.sub).verify(digest(subject, payload), Buffer.from(sig, 'base64url'));
  } catch {
    signed = false;
  }
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
