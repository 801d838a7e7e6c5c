import { readFileSync } from 'node:fs';
import { decode } from '@nats-io/jwt';
import { credsAuthenticator, type Authenticator } from '@nats-io/transport-node';
import { inboxPrefixFor, type NatsRole } from '@granule/contracts';
import { NatsAuthError } from './nats-auth.errors';

/** What a `.creds` file says about its holder, and how to connect with it. */
export interface NatsCredentials {
  /** The file it came from (for messages; its content is never printed). */
  file: string;
  identity: string;
  role?: NatsRole;
  node?: string;
  publicKey: string;
  expiresAt?: Date;
  authenticator: Authenticator;
  /** The only inbox the identity may subscribe to; the client must create its inboxes under it. */
  inboxPrefix: string;
}

const JWT_BLOCK = /-----BEGIN NATS USER JWT-----\s*([A-Za-z0-9_.=-]+?)\s*------END NATS USER JWT------/;
const SEED_BLOCK = /-----BEGIN USER NKEY SEED-----\s*(SU[A-Z2-7]+)\s*------END USER NKEY SEED------/;

/** The user JWT and seed of a `.creds` file's text, or undefined when it is not one. */
export function splitCreds(text: string): { jwt: string; seed: string } | undefined {
  const jwt = JWT_BLOCK.exec(text)?.[1];
  const seed = SEED_BLOCK.exec(text)?.[1];
  return jwt && seed ? { jwt, seed } : undefined;
}

/** Reads a `.creds` file (NATS's user JWT plus seed) and checks its shape, naming the file on any problem. */
export function readCredentials(file: string, now = new Date()): NatsCredentials {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new NatsAuthError(
      'CREDENTIALS_UNREADABLE',
      `cannot read the NATS credentials file ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (err as Error).message}`,
    );
  }
  const parts = splitCreds(new TextDecoder().decode(bytes));
  if (!parts)
    throw new NatsAuthError(
      'CREDENTIALS_INVALID',
      `${file} is not a NATS credentials file: expected a user JWT block and a user seed block`,
    );
  let claims: ReturnType<typeof decode<{ tags?: string[] }>>;
  try {
    claims = decode<{ tags?: string[] }>(parts.jwt);
  } catch {
    throw new NatsAuthError('CREDENTIALS_INVALID', `${file}: the user JWT cannot be decoded`);
  }
  const tags = claims.nats?.tags ?? [];
  const tag = (name: string): string | undefined => tags.find((t) => t.startsWith(`${name}:`))?.slice(name.length + 1);
  const expiresAt = claims.exp ? new Date(claims.exp * 1000) : undefined;
  if (expiresAt && expiresAt.getTime() <= now.getTime())
    throw new NatsAuthError(
      'CREDENTIALS_INVALID',
      `the NATS credentials in ${file} (identity '${claims.name}') expired at ${expiresAt.toISOString()}: ask for new ones ('granule agent enroll' or 'granule auth issue')`,
    );
  return {
    file,
    identity: claims.name,
    role: tag('role') as NatsRole | undefined,
    node: tag('node'),
    publicKey: claims.sub,
    expiresAt,
    authenticator: credsAuthenticator(bytes),
    inboxPrefix: inboxPrefixFor(claims.name),
  };
}
