import { createPrivateKey, createPublicKey, sign as ed25519Sign } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { encodeAccount, encodeOperator, encodeUser, fmtCreds, type Account } from '@nats-io/jwt';
import { createAccount, createOperator, createUser, fromSeed, Prefix, type KeyPair } from '@nats-io/nkeys';
// The nkey text encoding (prefix, base32, CRC16), which the package's entry point does not export.
import { Codec } from '@nats-io/nkeys/lib/codec';
import { inboxPrefixFor, MAX_REPLY_MESSAGES, NATS_ROLES, permissionsFor, type NatsRole } from '@granule/contracts';
import { NatsAuthError } from './nats-auth.errors';

/**
 * The keys of one Granule installation's NATS trust chain, kept in a directory only its
 * administrators can read (mode 0700, files 0600):
 *
 * - `operator.nk` signs account JWTs. Needed only to create the store and to revoke (a
 *   revocation is a new account JWT). Keep it offline or in a Secret only the admin job mounts.
 * - `account-signing.nk` signs user JWTs: every service, operator and agent credential. It is
 *   the enrollment authority's key; rotating it is adding a second signing key to the account,
 *   issuing new credentials, then removing the old key (docs/architecture.md, "Security model").
 * - `system.nk`, `account.nk`: the two accounts' identity keys (the system account is NATS's own).
 * - `identities.json`: every credential issued (name, role, node, public key, expiry, revocation),
 *   no secret in it.
 * - `nats-auth.conf`: what nats-server includes (operator JWT, system account, MEMORY resolver with
 *   both account JWTs preloaded, and the time a client has to authenticate). Rewritten on every
 *   revocation; a config reload applies it.
 */

/**
 * Seconds a new connection has to authenticate (nats-server's default is 2). A client signs the
 * server's nonce with its nkey before it sends CONNECT; when a whole fleet reconnects at once
 * after a server restart, or a busy host runs many connections, 2 s was seen to run out
 * ("Authentication Timeout") on a loaded 2-core machine. A silent connection is still dropped.
 */
export const NATS_AUTH_TIMEOUT_SECONDS = 5;
export interface IssuedIdentity {
  name: string;
  role: NatsRole;
  node?: string;
  publicKey: string;
  issuedAt: string;
  expiresAt?: string;
  revokedAt?: string;
}

export type IdentityStatus = 'active' | 'expired' | 'revoked';

export interface IssueRequest {
  /** Letters, digits, `_` and `-`: it names the identity's inbox (`_INBOX_<name>`). */
  name: string;
  role: NatsRole;
  /** Required for `agent`: the node the credential is bound to. */
  node?: string;
  /** Seconds until the credential expires; none for services. */
  ttlSeconds?: number;
}

export interface IssuedCredentials {
  identity: IssuedIdentity;
  /** The `.creds` file's content (user JWT and seed). Write it with mode 0600; never log it. */
  creds: string;
}

const FILES = {
  operatorSeed: 'operator.nk',
  systemSeed: 'system.nk',
  accountSeed: 'account.nk',
  signingSeed: 'account-signing.nk',
  operatorJwt: 'operator.jwt',
  systemJwt: 'system.jwt',
  accountJwt: 'account.jwt',
  identities: 'identities.json',
  serverInclude: 'nats-auth.conf',
  settings: 'settings.json',
} as const;

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** PKCS#8 DER header of an Ed25519 private key (RFC 8410): its 32-byte seed follows. */
const ED25519_PKCS8 = Buffer.from('302e020100300506032b657004220420', 'hex');

/**
 * The same key pair (`prefix`: its kind), its public key and signatures made by Node's crypto
 * (OpenSSL): tweetnacl, under nkeys, derives the key pair again in JavaScript for every public key
 * and signature, milliseconds each, and a bench enrolls thousands of hollow nodes. Ed25519
 * signatures are deterministic: the JWTs are those the plain pair would sign.
 */
function quickPair(kp: KeyPair, prefix: Prefix): KeyPair {
  const seed = (kp as KeyPair & { getRawSeed(): Uint8Array }).getRawSeed();
  const key = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8, seed]), format: 'der', type: 'pkcs8' });
  // The SPKI DER of an Ed25519 key ends with its 32 raw bytes.
  const raw = createPublicKey(key).export({ format: 'der', type: 'spki' }).subarray(-32);
  const publicKey = new TextDecoder().decode(Codec.encode(prefix, raw));
  let privateKey: Uint8Array | undefined;
  return Object.assign(Object.create(kp) as KeyPair, {
    getPublicKey: () => publicKey,
    // The JWT library asks a signer for it on every JWT, to check it has one.
    getPrivateKey: () => (privateKey ??= kp.getPrivateKey()),
    sign: (input: Uint8Array) => new Uint8Array(ed25519Sign(null, input, key)),
  });
}

interface Settings {
  /** Subject prefix every permission is written for (`granule` unless a test shares a server). */
  prefix: string;
}

/** Unlimited account limits, JetStream on: the account is the whole installation. */
const ACCOUNT_LIMITS: Account['limits'] = {
  subs: -1,
  data: -1,
  payload: -1,
  imports: -1,
  exports: -1,
  wildcards: true,
  conn: -1,
  leaf: -1,
  mem_storage: -1,
  disk_storage: -1,
  streams: -1,
  consumer: -1,
};

export class TrustStore {
  private constructor(
    readonly dir: string,
    private readonly settings: Settings,
  ) {}

  /** Creates a new trust chain in `dir` (which must not hold one) for subjects under `prefix`. */
  static async create(dir: string, options: { prefix?: string; operatorName?: string } = {}): Promise<TrustStore> {
    if (existsSync(path.join(dir, FILES.operatorSeed)))
      throw new NatsAuthError('TRUST_STORE_EXISTS', `${dir} already holds a trust store: refusing to replace its keys`);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    const operator = createOperator();
    const system = createAccount();
    const account = createAccount();
    const signing = createAccount();
    const store = new TrustStore(dir, { prefix: options.prefix ?? 'granule' });
    store.writeSecret(FILES.operatorSeed, operator.getSeed());
    store.writeSecret(FILES.systemSeed, system.getSeed());
    store.writeSecret(FILES.accountSeed, account.getSeed());
    store.writeSecret(FILES.signingSeed, signing.getSeed());
    store.writeFile(
      FILES.operatorJwt,
      await encodeOperator(options.operatorName ?? 'granule', operator, { system_account: system.getPublicKey() }),
    );
    store.writeFile(
      FILES.systemJwt,
      await encodeAccount('SYS', system, { limits: { conn: -1 } }, { signer: operator }),
    );
    store.writeFile(FILES.settings, JSON.stringify(store.settings, null, 2));
    store.writeFile(FILES.identities, '[]\n');
    await store.signAccount({});
    return store;
  }

  /** Opens the trust store in `dir`. */
  static open(dir: string): TrustStore {
    const file = path.join(dir, FILES.settings);
    if (!existsSync(file))
      throw new NatsAuthError(
        'TRUST_STORE_MISSING',
        `no trust store in ${dir}: create one with 'granule auth init ${dir}'`,
      );
    let settings: Settings;
    try {
      settings = JSON.parse(readFileSync(file, 'utf8')) as Settings;
    } catch (err) {
      throw new NatsAuthError('TRUST_STORE_INVALID', `${file} is not valid JSON: ${(err as Error).message}`);
    }
    return new TrustStore(dir, settings);
  }

  get prefix(): string {
    return this.settings.prefix;
  }

  get operatorJwt(): string {
    return this.readFile(FILES.operatorJwt);
  }

  /** Issues a credential and records it. A name already issued gets a new key (the old one stays valid until revoked). */
  async issue(request: IssueRequest, now = new Date()): Promise<IssuedCredentials> {
    const [issued] = await this.issueAll([request], now);
    return issued as IssuedCredentials;
  }

  /**
   * Issues several credentials and records them in one write of `identities.json` (a bench
   * enrolls thousands of hollow nodes; one write each would rewrite the growing file every time).
   * Every request is checked before any is issued.
   */
  async issueAll(requests: IssueRequest[], now = new Date()): Promise<IssuedCredentials[]> {
    for (const request of requests) this.checkRequest(request);
    const signing = quickPair(this.seed(FILES.signingSeed), Prefix.Account);
    const account = quickPair(this.seed(FILES.accountSeed), Prefix.Account);
    const out: IssuedCredentials[] = [];
    for (const request of requests) out.push(await this.sign(request, signing, account, now));
    this.writeFile(FILES.identities, JSON.stringify([...this.identities(), ...out.map((o) => o.identity)], null, 2));
    return out;
  }

  private checkRequest(request: IssueRequest): void {
    if (!NAME.test(request.name))
      throw new NatsAuthError(
        'IDENTITY_INVALID',
        `identity name '${request.name}' is not allowed: use 1 to 64 letters, digits, '_' or '-'`,
      );
    if (!NATS_ROLES.includes(request.role))
      throw new NatsAuthError(
        'IDENTITY_INVALID',
        `unknown role '${request.role}': expected one of ${NATS_ROLES.join(', ')}`,
      );
    if (request.role === 'agent' && !request.node)
      throw new NatsAuthError('IDENTITY_INVALID', `an agent credential is bound to a node: give the node uid`);
  }

  private async sign(request: IssueRequest, signing: KeyPair, account: KeyPair, now: Date): Promise<IssuedCredentials> {
    const user = quickPair(createUser(), Prefix.User);
    const inboxPrefix = inboxPrefixFor(request.name);
    const perms = permissionsFor(request.role, { prefix: this.prefix, inboxPrefix, node: request.node });
    const iat = Math.floor(now.getTime() / 1000);
    const exp = request.ttlSeconds !== undefined ? iat + request.ttlSeconds : undefined;
    const token = await encodeUser(
      request.name,
      user,
      signing,
      {
        issuer_account: account.getPublicKey(),
        pub: { allow: perms.pub },
        sub: { allow: perms.sub },
        // An answer may come in chunks (MAX_REPLY_MESSAGES), each one a reply message.
        ...(perms.respond ? { resp: { max: MAX_REPLY_MESSAGES, ttl: 0 } } : {}),
        tags: [`role:${request.role}`, ...(request.node ? [`node:${request.node}`] : [])],
      },
      exp !== undefined ? { exp } : {},
    );
    // The JWT library stamps its own issue time; keep the one a revocation will compare with (read
    // from the claims just signed: decode() would verify the signature again, in JavaScript).
    const signed = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { iat: number };
    const issuedAt = new Date(signed.iat * 1000).toISOString();
    const identity: IssuedIdentity = {
      name: request.name,
      role: request.role,
      ...(request.node ? { node: request.node } : {}),
      publicKey: user.getPublicKey(),
      issuedAt,
      ...(exp !== undefined ? { expiresAt: new Date(exp * 1000).toISOString() } : {}),
    };
    return { identity, creds: new TextDecoder().decode(fmtCreds(token, user)) };
  }

  identities(): IssuedIdentity[] {
    return JSON.parse(this.readFile(FILES.identities)) as IssuedIdentity[];
  }

  /** The status of every credential issued to `name` (or bound to node `name`), newest last. */
  statusOf(name: string, now = new Date()): { identity: IssuedIdentity; status: IdentityStatus }[] {
    return this.identities()
      .filter((i) => i.name === name || i.node === name)
      .map((identity) => ({ identity, status: statusAt(identity, now) }));
  }

  /**
   * Revokes every credential issued to `name` (or bound to node `name`) up to now: the account
   * JWT gets a revocation entry per key and `nats-auth.conf` is rewritten. The server refuses the
   * revoked keys once it has reloaded its configuration (`nats-server --signal reload`).
   */
  async revoke(name: string, now = new Date()): Promise<IssuedIdentity[]> {
    const all = this.identities();
    const targets = all.filter((i) => (i.name === name || i.node === name) && !i.revokedAt);
    if (targets.length === 0) {
      const known = all.some((i) => i.name === name || i.node === name);
      throw new NatsAuthError(
        'IDENTITY_UNKNOWN',
        known
          ? `every credential of '${name}' is already revoked`
          : `no credential was issued to '${name}' in ${this.dir}`,
      );
    }
    const at = now.toISOString();
    for (const t of targets) t.revokedAt = at;
    this.writeFile(FILES.identities, JSON.stringify(all, null, 2));
    await this.signAccount(this.revocations(all));
    return targets;
  }

  /** The nats-server configuration block that makes this trust chain the server's (include it). */
  serverInclude(): string {
    return this.readFile(FILES.serverInclude);
  }

  get serverIncludePath(): string {
    return path.join(this.dir, FILES.serverInclude);
  }

  private revocations(identities: IssuedIdentity[]): Record<string, number> {
    const list: Record<string, number> = {};
    for (const i of identities) {
      // NATS refuses every JWT of that key issued at or before this second.
      if (i.revokedAt) list[i.publicKey] = Math.floor(Date.parse(i.revokedAt) / 1000);
    }
    return list;
  }

  private async signAccount(revocations: Record<string, number>): Promise<void> {
    const operator = this.seed(FILES.operatorSeed);
    const account = this.seed(FILES.accountSeed);
    const signing = this.seed(FILES.signingSeed);
    const system = this.seed(FILES.systemSeed);
    const accountJwt = await encodeAccount(
      'GRANULE',
      account,
      { signing_keys: [signing.getPublicKey()], revocations, limits: ACCOUNT_LIMITS },
      { signer: operator },
    );
    this.writeFile(FILES.accountJwt, accountJwt);
    this.writeFile(
      FILES.serverInclude,
      [
        '# Written by granule auth: the installation trust chain (operator, accounts, revocations).',
        `operator: ${this.readFile(FILES.operatorJwt)}`,
        `system_account: ${system.getPublicKey()}`,
        `authorization { timeout: ${NATS_AUTH_TIMEOUT_SECONDS} }`,
        'resolver: MEMORY',
        'resolver_preload: {',
        `  ${system.getPublicKey()}: ${this.readFile(FILES.systemJwt)}`,
        `  ${account.getPublicKey()}: ${accountJwt}`,
        '}',
        '',
      ].join('\n'),
    );
  }

  private seed(file: string): KeyPair {
    try {
      return fromSeed(new TextEncoder().encode(this.readFile(file).trim()));
    } catch (err) {
      if (err instanceof NatsAuthError) throw err;
      throw new NatsAuthError('TRUST_STORE_INVALID', `${path.join(this.dir, file)} does not hold a valid seed`);
    }
  }

  private readFile(file: string): string {
    const full = path.join(this.dir, file);
    try {
      return readFileSync(full, 'utf8');
    } catch (err) {
      throw new NatsAuthError(
        'TRUST_STORE_INVALID',
        `cannot read ${full}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
  }

  /** Writes beside the target and renames, so a crash never leaves half a key or config. */
  private writeFile(file: string, content: string | Uint8Array, mode = 0o600): void {
    const full = path.join(this.dir, file);
    const tmp = `${full}.${process.pid}.tmp`;
    writeFileSync(tmp, content, { mode });
    renameSync(tmp, full);
  }

  private writeSecret(file: string, seed: Uint8Array): void {
    this.writeFile(file, `${new TextDecoder().decode(seed)}\n`);
  }
}

export function statusAt(identity: IssuedIdentity, now: Date): IdentityStatus {
  if (identity.revokedAt) return 'revoked';
  if (identity.expiresAt && Date.parse(identity.expiresAt) <= now.getTime()) return 'expired';
  return 'active';
}
