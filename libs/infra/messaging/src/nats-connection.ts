import { readFileSync } from 'node:fs';
import { connect, headers as natsHeaders, type ConnectionOptions, type NatsConnection } from '@nats-io/transport-node';
import { GranuleError } from '@granule/core';
import { readCredentials, signMessage, type NatsCredentials } from '@granule/nats-auth';
import { NatsUnreachableError, redactUrl } from './messaging.errors';
import { signRequestsOn } from './nats-request';

/** Where NATS is and how to prove who this process is (service-kit's `NatsSettings` has this shape). */
export interface NatsConnectionSettings {
  natsUrl: string;
  /** `.creds` file (user JWT and seed). */
  natsCreds?: string;
  /** PEM CA to trust for the server's certificate (TLS). */
  natsTlsCa?: string;
  /** PEM client certificate and key (TLS with client verification). */
  natsTlsCert?: string;
  natsTlsKey?: string;
}

export interface ConnectNatsOptions {
  /** Milliseconds to wait for the first connection. Default 5000. */
  timeoutMs?: number;
  /** What to do when NATS cannot be reached (default: start it or set GRANULE_NATS_URL). */
  hint?: string;
  /**
   * Called with one line when the connection closes for good on an error after it was made:
   * NATS refused the credential at a reconnection (revoked, expired) and the client gave up. A
   * service stops then (its supervisor restarts it, and the refusal is one line at every start).
   */
  onLost?: (message: string) => void;
}

/** The connection refused this process's credentials or certificates; the message names the file, never its content. */
export class NatsRefusedError extends GranuleError<'NATS_REFUSED'> {}

/** The identity a connection was opened with, when it has credentials. */
const identities = new WeakMap<NatsConnection, NatsCredentials>();

/** Who this connection is (its credential), or undefined for a connection without one. */
export function identityOf(nc: NatsConnection): NatsCredentials | undefined {
  return identities.get(nc);
}

function readPem(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new NatsRefusedError(
      'NATS_REFUSED',
      `cannot read the NATS ${what} ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (err as Error).message}`,
    );
  }
}

function tlsOptions(settings: NatsConnectionSettings): ConnectionOptions['tls'] | undefined {
  const { natsTlsCa, natsTlsCert, natsTlsKey } = settings;
  if ((natsTlsCert === undefined) !== (natsTlsKey === undefined))
    throw new NatsRefusedError(
      'NATS_REFUSED',
      'a NATS client certificate needs its key and the key its certificate: set both GRANULE_NATS_TLS_CERT and GRANULE_NATS_TLS_KEY',
    );
  const tls: NonNullable<ConnectionOptions['tls']> = {};
  if (natsTlsCa) tls.ca = readPem(natsTlsCa, 'CA file');
  if (natsTlsCert && natsTlsKey) {
    tls.cert = readPem(natsTlsCert, 'client certificate');
    tls.key = readPem(natsTlsKey, 'client key');
  }
  return Object.keys(tls).length > 0 || settings.natsUrl.startsWith('tls://') ? tls : undefined;
}

/** Why the server refused us, in the operator's words (no secret: NATS's messages carry none). */
function refusal(
  err: unknown,
  settings: NatsConnectionSettings,
  creds: NatsCredentials | undefined,
): string | undefined {
  const text = `${(err as Error)?.message ?? ''} ${((err as Error)?.cause as Error | undefined)?.message ?? ''}`;
  const who = creds ? `the credential of '${creds.identity}' in ${creds.file}` : 'a connection without credentials';
  if (/authorization violation|authentication/i.test(text)) {
    if (/expired/i.test(text)) return `NATS refused ${who}: it has expired — ask for a new one`;
    if (/revoked/i.test(text)) return `NATS refused ${who}: it was revoked — ask for a new one`;
    return creds
      ? `NATS refused ${who} (Authorization Violation): it was revoked, or issued for another installation — ask for a new one`
      : `NATS requires credentials: set GRANULE_NATS_CREDS to a .creds file (granule auth issue, granule agent enroll)`;
  }
  if (/certificate|self.signed|unable to verify|SSL|TLS/i.test(text))
    return `the TLS handshake with NATS at ${redactUrl(settings.natsUrl)} failed: ${text.trim().split('\n')[0]} — check GRANULE_NATS_TLS_CA (and the client certificate and key when the server asks for one)`;
  return undefined;
}

/**
 * The one way every Granule process connects to NATS (services, agents, the CLI, benchmarks):
 * `natsUrl` (one URL or a comma-separated list) under the client name `name`, with the process's
 * credential (`natsCreds`) and TLS files when set. With a credential, inboxes are created under
 * the identity's own prefix (the only one its permissions let it read) and every request and
 * command it sends is signed with it, so receivers learn who sent it (nats-auth).
 *
 * A first connection that fails stops the process with one line: unreachable
 * (`NatsUnreachableError`), or refused credentials or certificates (`NatsRefusedError`),
 * naming the URL (password hidden) and the file, never a secret. Once connected, the client
 * reconnects forever (a broker restart is not fatal). Requests do not capture the caller's stack
 * up front (`noAsyncTraces`): that cost two stack captures per request on every dispatch and
 * result.
 */
export async function connectNats(
  settings: NatsConnectionSettings,
  name: string,
  options: ConnectNatsOptions = {},
): Promise<NatsConnection> {
  const { servers, user, pass } = splitUrlCredentials(settings.natsUrl);
  const creds = settings.natsCreds ? readCredentials(settings.natsCreds) : undefined;
  const tls = tlsOptions(settings);
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers,
      name,
      timeout: options.timeoutMs ?? 5000,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 1000,
      noAsyncTraces: true,
      ...(creds ? { authenticator: creds.authenticator, inboxPrefix: creds.inboxPrefix } : {}),
      ...(!creds && user !== undefined ? (pass !== undefined ? { user, pass } : { token: user }) : {}),
      ...(tls ? { tls } : {}),
    });
  } catch (err) {
    const refused = refusal(err, settings, creds);
    if (refused) throw new NatsRefusedError('NATS_REFUSED', refused, { cause: err });
    throw new NatsUnreachableError(settings.natsUrl, reasonOf(err), { cause: err, hint: options.hint });
  }
  if (options.onLost) {
    const onLost = options.onLost;
    void nc.closed().then((err) => {
      if (err) onLost(refusal(err, settings, creds) ?? `the NATS connection closed: ${reasonOf(err)}`);
    });
  }
  if (creds) {
    identities.set(nc, creds);
    const text = readFileSync(creds.file, 'utf8');
    signRequestsOn(nc, (subject, payload) => {
      const h = natsHeaders();
      for (const [k, v] of Object.entries(signMessage(text, subject, payload))) h.set(k, v);
      return h;
    });
  }
  return nc;
}

/**
 * The servers of a NATS URL list without their user info, and the user and password (or token)
 * the first one with user info gives: NATS's client ignores credentials written in a URL.
 */
export function splitUrlCredentials(urls: string): { servers: string[]; user?: string; pass?: string } {
  let user: string | undefined;
  let pass: string | undefined;
  const servers = urls
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => {
      const m = /^([a-z][a-z0-9+.-]*:\/\/)([^@/]*)@(.*)$/i.exec(s);
      if (!m) return s;
      if (user === undefined) {
        const [u, p] = m[2].split(':', 2);
        user = decodeURIComponent(u);
        pass = p === undefined ? undefined : decodeURIComponent(p);
      }
      return `${m[1]}${m[3]}`;
    });
  return { servers, ...(user !== undefined ? { user } : {}), ...(pass !== undefined ? { pass } : {}) };
}

function reasonOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err.cause as { code?: string } | undefined)?.code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'unknown host';
  const cause = err.cause instanceof Error ? err.cause.message : undefined;
  return cause && !err.message.includes(cause) ? `${err.message} (${cause})` : err.message;
}
