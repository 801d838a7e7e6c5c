import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { escapeControlCharacters, UsageError } from '@granule/core';
import { NATS_ROLES, type NatsRole } from '@granule/contracts';
import { ConfigStoreClient } from '@granule/config-store-client';
import { connectNats } from '@granule/messaging';
import { NatsAuthError, readCredentials, statusAt, TrustStore, type IssuedIdentity } from '@granule/nats-auth';
import { parseFormat, toJson, toTable, toYaml } from '../output';
import { parseDuration } from '../durations';
import { cliEnvironment } from '../cli-environment';
import {
  addConnectionOptions,
  connectionSettings,
  type ConnectionFlags,
  type ConnectionSettings,
} from '../connection/cli-connection';

/** The services every installation runs, each with its own credential. */
export const SERVICE_IDENTITIES: { name: string; role: NatsRole }[] = [
  { name: 'orchestrator', role: 'orchestrator' },
  { name: 'config-store', role: 'config-store' },
  { name: 'graph-planner', role: 'graph-planner' },
];

interface AuthDirOption {
  authDir?: string;
}

/** An agent command that changes the trust store and records the result in the config-store. */
type AgentOptions = AuthDirOption & ConnectionFlags & { record: boolean };

const NO_RECORD_HELP = 'change the trust store only (e.g. before NATS runs); granule agent record records it later';

/** `--auth-dir`, else GRANULE_AUTH_DIR: where the trust store's keys live. */
function authDirOf(opts: AuthDirOption): string {
  const dir = opts.authDir ?? cliEnvironment.GRANULE_AUTH_DIR;
  if (!dir) throw new UsageError('no trust store named: pass --auth-dir DIR or set GRANULE_AUTH_DIR');
  return path.resolve(dir);
}

/** Writes a credentials file readable by its owner only, creating its folder. */
export function writeCredentials(file: string, creds: string): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, creds, { mode: 0o600 });
}

/** Node uids become identity names `agent-<uid>`. */
export function agentIdentity(nodeUid: string): string {
  return `agent-${nodeUid}`;
}

/**
 * Tells nats-server to read its configuration again so that a revocation takes effect:
 * `--nats-pid` is a process id or a pid file.
 */
/** The process id `--nats-pid` names (a pid or a pid file), checked before anything changes. */
function natsPidOf(pidOrFile: string): number {
  const text = existsSync(pidOrFile) ? readFileSync(pidOrFile, 'utf8').trim() : pidOrFile;
  const pid = Number(text);
  if (!Number.isInteger(pid) || pid <= 0)
    throw new UsageError(`--nats-pid ${pidOrFile}: expected a process id or a file that holds one`);
  return pid;
}

function reloadNats(pid: number, pidOrFile: string): number {
  try {
    process.kill(pid, 'SIGHUP');
  } catch (err) {
    throw new UsageError(
      `--nats-pid ${pidOrFile}: cannot signal process ${pid}: ${(err as NodeJS.ErrnoException).code}`,
    );
  }
  return pid;
}

function identityRows(identities: IssuedIdentity[], now = new Date()): Record<string, unknown>[] {
  return identities.map((i) => ({
    name: i.name,
    role: i.role,
    node: i.node ?? '',
    status: statusAt(i, now),
    issued: i.issuedAt,
    expires: i.expiresAt ?? 'never',
    public_key: i.publicKey,
  }));
}

function print(rows: Record<string, unknown>[], format: string): void {
  const f = parseFormat(format, ['json', 'yaml', 'table'] as const);
  process.stdout.write(f === 'json' ? toJson(rows) : f === 'yaml' ? toYaml(rows) : toTable(rows));
}

/** `granule auth init|issue|list` — the NATS trust chain of an installation (no bus needed). */
export function registerAuthCommand(program: Command): void {
  const auth = program
    .command('auth')
    .description('NATS credentials: the trust store that issues every service, operator and agent identity');

  auth
    .command('init')
    .description('create a trust store (keys, server configuration) and the services’ credentials')
    .argument('<dir>', 'folder for the keys (created with mode 0700; keep it off the hosts)')
    .option('--prefix <prefix>', 'subject prefix the permissions are written for', 'granule')
    .addHelpText(
      'after',
      '\nExample:\n  granule auth init /etc/granule/auth\n  # then add to nats-server.conf: include /etc/granule/auth/nats-auth.conf',
    )
    .action(async (dir: string, opts: { prefix: string }) => {
      const store = await TrustStore.create(path.resolve(dir), { prefix: opts.prefix });
      const lines = [`trust store created in ${store.dir}`, `nats-server include: ${store.serverIncludePath}`];
      for (const s of [...SERVICE_IDENTITIES, { name: 'admin', role: 'admin' as NatsRole }]) {
        const { creds } = await store.issue(s);
        const file = path.join(store.dir, 'creds', `${s.name}.creds`);
        writeCredentials(file, creds);
        lines.push(`${s.role} credentials: ${file}`);
      }
      process.stdout.write(`${lines.join('\n')}\n`);
    });

  auth
    .command('issue')
    .description('issue a credential for an operator, a read-only viewer or a service')
    .argument('<name>', 'identity name (letters, digits, _ and -), recorded with every command it sends')
    .requiredOption('--role <role>', `one of ${NATS_ROLES.filter((r) => r !== 'agent').join(', ')}`)
    .option('--expires <duration>', 'lifetime such as 90d or 12h (default: none)')
    .option('--out <file>', 'where to write the .creds file (mode 0600); - for stdout', '-')
    .option('--auth-dir <dir>', 'the trust store (default: GRANULE_AUTH_DIR)')
    .addHelpText(
      'after',
      '\nExample:\n  granule auth issue alice --role operator --expires 90d --out ~/.config/granule/alice.creds',
    )
    .action(async (name: string, opts: AuthDirOption & { role: string; expires?: string; out: string }) => {
      if (opts.role === 'agent') throw new UsageError('--role agent: enroll agents with granule agent enroll NODE_UID');
      if (!(NATS_ROLES as readonly string[]).includes(opts.role))
        throw new UsageError(`--role ${opts.role}: expected one of ${NATS_ROLES.join(', ')}`);
      const store = TrustStore.open(authDirOf(opts));
      const ttlSeconds = opts.expires ? parseDuration(opts.expires, '--expires') : undefined;
      const { creds, identity } = await store.issue({ name, role: opts.role as NatsRole, ttlSeconds });
      if (opts.out === '-') process.stdout.write(creds);
      else {
        writeCredentials(path.resolve(opts.out), creds);
        process.stdout.write(`${identity.role} credentials for ${identity.name}: ${path.resolve(opts.out)}\n`);
      }
    });

  auth
    .command('list')
    .description('list every credential issued, with its status (active, expired, revoked)')
    .option('--auth-dir <dir>', 'the trust store (default: GRANULE_AUTH_DIR)')
    .option('-o, --output <format>', 'json | yaml | table', 'table')
    .addHelpText('after', '\nExample:\n  granule auth list --auth-dir /etc/granule/auth -o json')
    .action((opts: AuthDirOption & { output: string }) => {
      print(identityRows(TrustStore.open(authDirOf(opts)).identities()), opts.output);
    });
}

/** `granule agent enroll|revoke` — one node's credential. */
export function registerAgentCredentialCommands(program: Command): void {
  const agent =
    program.commands.find((c) => c.name() === 'agent') ??
    program.command('agent').description('node agents: credentials and packages');

  addConnectionOptions(agent.command('enroll'))
    .description("issue a node's agent credential: it may take only that node's tasks and report only its results")
    .argument('<node-uid>', 'the node the credential is bound to')
    .option('--expires <duration>', 'lifetime such as 90d or 12h', '365d')
    .option('--out <file>', 'where to write the .creds file (mode 0600); - for stdout', '-')
    .option('--auth-dir <dir>', 'the trust store (default: GRANULE_AUTH_DIR)')
    .option('--no-record', NO_RECORD_HELP)
    .addHelpText(
      'after',
      '\nThe credential is then recorded in the config-store (as the admin identity: --creds, else\n<auth-dir>/creds/admin.creds), so that granule node list shows it.\n\nExample:\n  granule agent enroll node-12 --out node-12.creds\n  # copy it to the host as /etc/granule/agent.creds (mode 0600)',
    )
    .action(async (uid: string, opts: AgentOptions & { expires: string; out: string }) => {
      const store = TrustStore.open(authDirOf(opts));
      const { creds, identity } = await store.issue({
        name: agentIdentity(uid),
        role: 'agent',
        node: uid,
        ttlSeconds: parseDuration(opts.expires, '--expires'),
      });
      // With the credential on stdout, every other line goes to stderr.
      const say = (line: string): void => {
        (opts.out === '-' ? process.stderr : process.stdout).write(`${line}\n`);
      };
      if (opts.out === '-') process.stdout.write(creds);
      else {
        writeCredentials(path.resolve(opts.out), creds);
        say(`agent credentials for node ${uid} (expires ${identity.expiresAt}): ${path.resolve(opts.out)}`);
      }
      await recordOrWarn(store, uid, opts, say);
    });

  addConnectionOptions(agent.command('revoke'))
    .description("revoke every credential of a node's agent: NATS refuses it from the next server reload on")
    .argument('<node-uid>', 'the node whose agent is revoked')
    .option('--auth-dir <dir>', 'the trust store (default: GRANULE_AUTH_DIR)')
    .option('--nats-pid <pid|file>', 'signal this nats-server to reload now (a pid or a pid file)')
    .option('--no-record', NO_RECORD_HELP)
    .addHelpText(
      'after',
      '\nThe revocation is then recorded in the config-store, as for enroll.\n\nExample:\n  granule agent revoke node-12 --nats-pid /var/run/nats-server.pid',
    )
    .action(async (uid: string, opts: AgentOptions & { natsPid?: string }) => {
      const say = (line: string): void => {
        process.stdout.write(`${line}\n`);
      };
      const pid = opts.natsPid === undefined ? undefined : natsPidOf(opts.natsPid);
      const store = TrustStore.open(authDirOf(opts));
      const revoked = await store.revoke(uid);
      say(`revoked ${revoked.length} credential(s) of node ${uid}`);
      // Recorded before the reload: a connection made while nats-server reloads can be refused.
      await recordOrWarn(store, uid, opts, say);
      if (pid !== undefined && opts.natsPid !== undefined)
        say(`nats-server (pid ${reloadNats(pid, opts.natsPid)}) is reloading its configuration`);
      else
        say(
          `apply it: reload every nats-server that includes ${store.serverIncludePath} (nats-server --signal reload)`,
        );
    });

  addConnectionOptions(agent.command('record'))
    .description(
      "record a node's agent credentials in the config-store as the trust store has them, so that granule node list shows them",
    )
    .argument('<node-uid>', 'the node whose credentials are recorded')
    .option('--auth-dir <dir>', 'the trust store (default: GRANULE_AUTH_DIR)')
    .addHelpText(
      'after',
      '\nFor an enroll or revoke that could not reach the config-store. It connects as the admin identity:\n--creds (or GRANULE_NATS_CREDS) when that is an admin credential, else <auth-dir>/creds/admin.creds.\n\nExample:\n  granule agent record node-12 --auth-dir /etc/granule/auth',
    )
    .action(async (uid: string, opts: AuthDirOption & ConnectionFlags) => {
      const store = TrustStore.open(authDirOf(opts));
      const count = await recordCredentials(store, uid, opts);
      process.stdout.write(`recorded ${count} credential(s) of node ${uid} in the config-store\n`);
    });
}

/** The trust store's credentials bound to node `uid`, oldest first. */
function agentCredentialsOf(store: TrustStore, uid: string): IssuedIdentity[] {
  return store.identities().filter((i) => i.role === 'agent' && i.node === uid);
}

/**
 * The connection that records credentials: the CLI's own when its credential is an admin one
 * (or there is none and the trust store has no admin credential: a NATS without auth), else the
 * same server and prefix with the trust store's `creds/admin.creds` (`granule auth init` writes it).
 */
async function adminConnection(store: TrustStore, flags: ConnectionFlags): Promise<ConnectionSettings> {
  const settings = await connectionSettings(flags);
  if (settings.natsCreds && readCredentials(settings.natsCreds).role === 'admin') return settings;
  const admin = path.join(store.dir, 'creds', 'admin.creds');
  if (existsSync(admin)) return { ...settings, natsCreds: admin };
  if (settings.natsCreds)
    throw new NatsAuthError(
      'CREDENTIALS_INVALID',
      `${settings.natsCreds} is not an admin credential and ${admin} does not exist: pass --creds with an admin credential`,
    );
  return settings;
}

/**
 * Records every credential of node `uid` the trust store has (the config-store keeps one row per
 * key, so recording one again changes nothing, and a revocation stays). Returns how many.
 */
async function recordCredentials(store: TrustStore, uid: string, flags: ConnectionFlags): Promise<number> {
  const credentials = agentCredentialsOf(store, uid);
  if (credentials.length === 0)
    throw new NatsAuthError('IDENTITY_UNKNOWN', `no agent credential was issued to node '${uid}' in ${store.dir}`);
  const settings = await adminConnection(store, flags);
  const nc = await connectNats(settings, 'granule-cli');
  try {
    const client = new ConfigStoreClient(nc, { prefix: settings.subjectPrefix });
    for (const c of credentials)
      await client.request('credential.record', {
        uid,
        identity: c.name,
        public_key: c.publicKey,
        issued_at: c.issuedAt,
        ...(c.expiresAt ? { expires_at: c.expiresAt } : {}),
        ...(c.revokedAt ? { revoked_at: c.revokedAt } : {}),
      });
  } finally {
    await nc.close();
  }
  return credentials.length;
}

/**
 * After the trust store changed: records the node's credentials, or says in one line that
 * `node list` will not show the change and how to record it later. The trust store's change
 * stands either way (NATS enforces it), so this never fails the command.
 */
async function recordOrWarn(
  store: TrustStore,
  uid: string,
  opts: AgentOptions,
  say: (line: string) => void,
): Promise<void> {
  if (!opts.record) return;
  try {
    await recordCredentials(store, uid, opts);
    say(`recorded in the config-store: granule node list shows the credential of node ${uid}`);
  } catch (err) {
    const reason = escapeControlCharacters(((err as Error).message ?? String(err)).split('\n')[0]);
    process.stderr.write(
      `warning: not recorded in the config-store (${reason}): granule node list will not show it until you run granule agent record ${uid} --auth-dir ${store.dir}\n`,
    );
  }
}
