// What the benchmark scripts share: waiting for a condition, for a started service's ready
// line, one-off statements as the database administrator, and the authorized NATS and Redis
// they run on (dist/ must be built).
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resolves with the first truthy value of `check`, asked every `everyMs`; throws after `timeoutMs`. */
export async function waitFor(what, check, timeoutMs, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Waits until a started service's log has `readyText`; throws with the log's end if it exits first. */
export async function waitUntilReady({ child, logFile }, name, readyText, timeoutMs = 60_000) {
  await waitFor(
    `${name} to start`,
    () => {
      if (child.exitCode !== null)
        throw new Error(`${name} exited at start: ${readFileSync(logFile, 'utf8').slice(-1500)}`);
      return existsSync(logFile) && readFileSync(logFile, 'utf8').includes(readyText);
    },
    timeoutMs,
  );
  return child;
}

/** Runs one statement on its own connection (CREATE / DROP DATABASE, statistics). */
export async function adminQuery(connectionString, sql, params) {
  const c = new pg.Client({ connectionString });
  await c.connect();
  try {
    return await c.query(sql, params);
  } finally {
    await c.end();
  }
}

/** SIGTERMs every child, SIGKILLs those still there after `killAfterMs`, and waits for all to exit. */
export async function stopChildren(children, killAfterMs) {
  const exits = [...children].map(
    (c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', r))),
  );
  for (const c of children) c.kill('SIGTERM');
  const timer = setTimeout(() => {
    for (const c of children) c.kill('SIGKILL');
  }, killAfterMs);
  await Promise.all(exits);
  clearTimeout(timer);
}

/**
 * A whole-number option of a bench: `--flag N` on the command line (when `flag` is given), else
 * the environment variable `envName`, else `fallback`. Anything else ends the bench with a message
 * naming the option, before anything is started.
 */
export function wholeNumberOption(envName, fallback, { flag, min = 1 } = {}) {
  const i = flag ? process.argv.indexOf(flag) : -1;
  const raw = i >= 0 ? process.argv[i + 1] : process.env[envName];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) {
    const name = flag ? `${flag} / ${envName}` : envName;
    process.stderr.write(`${name}: expected a whole number >= ${min}, got ${JSON.stringify(raw)}\n`);
    process.exit(2);
  }
  return n;
}

/**
 * The identities a bench of the whole control plane gives credentials to: the orchestrator, the
 * graph planner, an operator and an admin (the bench's own queries), and an agent for each node.
 */
export function controlPlaneIdentities(agentUids) {
  return [
    ['orchestrator', 'orchestrator'],
    ['graph-planner', 'graph-planner'],
    ['bench-operator', 'operator'],
    ['bench-admin', 'admin'],
    ...agentUids.map((uid) => [`agent-${uid}`, 'agent', uid]),
  ];
}

/**
 * What a bench runs on by default, as an installation does: a trust store of its own in
 * `<work>/auth`, a credential for each of `identities` (`[name, role, node?]`, written to
 * `<work>/auth/creds/<name>.creds`), a nats-server with authorization on (its own port and store;
 * `natsSettings`: more lines of its configuration) and a Redis with a password. `stop()` ends
 * both servers; the folder goes with `work`.
 */
export async function startSecureServers({ work, prefix, identities, natsSettings = [] }) {
  const { startPrivateNats, startPrivateRedis } = require(path.join(root, 'dist/libs/infra/messaging/src/index.js'));
  const { TrustStore } = require(path.join(root, 'dist/libs/infra/nats-auth/src/index.js'));
  const trust = await TrustStore.create(path.join(work, 'auth'), { prefix });
  const credsDir = path.join(work, 'auth', 'creds');
  mkdirSync(credsDir, { recursive: true, mode: 0o700 });
  const credsOf = (name) => path.join(credsDir, `${name}.creds`);
  // One write of the trust store's record for all of them: a fleet bench issues thousands.
  const issued = await trust.issueAll(
    identities.map(([name, role, node]) => ({ name, role, ...(node !== undefined ? { node } : {}) })),
  );
  for (const { identity, creds } of issued) writeFileSync(credsOf(identity.name), creds, { mode: 0o600 });
  const nats = await startPrivateNats({ include: trust.serverIncludePath, settings: natsSettings });
  let redis;
  try {
    redis = await startPrivateRedis({ password: randomBytes(16).toString('hex') });
  } catch (err) {
    await nats.stop();
    throw err;
  }
  return {
    trust,
    credsDir,
    credsOf,
    nats,
    redis,
    natsUrl: nats.url,
    redisUrl: redis.url,
    async stop() {
      await Promise.allSettled([nats.stop(), redis.stop()]);
    },
  };
}
