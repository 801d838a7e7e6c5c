// npm run bench:watch-cost — what watching a deploy costs: the same deployment of N hollow nodes
// (test/bench/hollow-nodes.mjs, ADR 0012) x M chained no-op tasks, once with `granule deploy`
// (returns once the run is planned) and once with `granule deploy --watch` (follows the run to its
// end), through the real graph-planner and orchestrator on a nats-server and a database of the
// bench's own (by default with authorization on and a Redis with a password, every process with
// its own credential, as an installation runs; BENCH_AUTH=0: no credentials, the machine's Redis
// or GRANULE_REDIS_URL, e.g. for a --cli-dist build that predates credentials). For each it counts
//   - NATS messages of the CLI's connection (nats-server /connz of closed connections: messages
//     it sent plus messages it was sent),
//   - the queries the CLI asked the orchestrators (`<p>.runs.*` requests, counted by a listener),
//   - NATS messages through the server (/varz in_msgs + out_msgs, every client),
//   - database transactions of the bench database (pg_stat_database xact_commit; every
//     statement outside a transaction is one; read 11 s after the run so that idle backends have
//     reported theirs),
// and prints the watch's share: watched minus unwatched. Run it once on the code before the read
// spine (ADR 0033) and once after; `--cli-dist DIR` takes the CLI from another build's dist/ (the
// services always come from this one).
//
//   node test/bench/watch-cost.bench.mjs [--nodes N] [--tasks M] [--cli-dist DIR]   (or BENCH_NODES / BENCH_TASKS)
//
// Everything it creates (database, nats-server, Redis keys, temp dir, processes) is removed at
// the end, also on failure or Ctrl-C.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  adminQuery,
  controlPlaneIdentities,
  sleep,
  startSecureServers,
  stopChildren,
  waitFor,
  waitUntilReady,
  wholeNumberOption,
} from './bench-support.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const { Redis } = require('ioredis');

const ADMIN_URL = process.env.GRANULE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
let REDIS_URL = process.env.GRANULE_REDIS_URL ?? 'redis://127.0.0.1:6379';
const AUTH = process.env.BENCH_AUTH !== '0';

const NODES = wholeNumberOption('BENCH_NODES', 100, { flag: '--nodes' });
const TASKS = wholeNumberOption('BENCH_TASKS', 10, { flag: '--tasks' });
const cliDistFlag = process.argv.indexOf('--cli-dist');
const CLI_DIST = path.resolve(cliDistFlag >= 0 ? process.argv[cliDistFlag + 1] : path.join(root, 'dist'));
const log = (msg) => process.stderr.write(`[bench] ${msg}\n`);

const mains = {
  planner: path.join(root, 'dist/apps/graph-planner/src/main.js'),
  orchestrator: path.join(root, 'dist/apps/orchestrator/src/main.js'),
  hollow: path.join(root, 'test/bench/hollow-nodes.mjs'),
  cli: path.join(CLI_DIST, 'apps/cli/src/main.js'),
};
for (const file of Object.values(mains)) {
  if (!existsSync(file)) {
    process.stderr.write(`missing ${file}: run npm run build (npm run bench:watch-cost does)\n`);
    process.exit(1);
  }
}
const { connectNats, startPrivateNats } = require(path.join(root, 'dist/libs/infra/messaging/src/index.js'));
const { executionSubjects } = require(path.join(root, 'dist/libs/contracts/src/index.js'));

const id = randomBytes(4).toString('hex');
const prefix = `wcost${id}`;
const subjects = executionSubjects(prefix);
const dbName = `granule_wcost_${id}`;
const dbUrl = Object.assign(new URL(ADMIN_URL), { pathname: `/${dbName}` }).toString();
const work = mkdtempSync(path.join(tmpdir(), 'granule-bench-watch-'));
const children = new Set();
let dbCreated = false;
let nats;
let monitor;
/** With BENCH_AUTH (the default): the trust store, the servers and every process's credential. */
let secured;
const uids = Array.from({ length: NODES }, (_, i) => `h${i + 1}`);

/** The credential variables of a process by its name (none with BENCH_AUTH=0); each hollow node has its own. */
function credsEnv(name) {
  if (!secured) return {};
  if (name === 'hollow-nodes') return { GRANULE_NATS_CREDS_DIR: secured.credsDir };
  return { GRANULE_NATS_CREDS: secured.credsOf(name === 'cli' ? 'bench-operator' : name) };
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const admin = (sql, params) => adminQuery(ADMIN_URL, sql, params);

function env(extra = {}) {
  const base = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GRANULE_') && k !== 'NODE_OPTIONS') base[k] = v;
  return {
    ...base,
    GRANULE_NATS_URL: nats.url,
    GRANULE_REDIS_URL: REDIS_URL,
    GRANULE_SUBJECT_PREFIX: prefix,
    XDG_CONFIG_HOME: work,
    GRANULE_HEALTH_PORT: '0',
    ...extra,
  };
}

function start(name, main, extra) {
  const logFile = path.join(work, `${name}.log`);
  const fd = openSync(logFile, 'a');
  const child = spawn(process.execPath, [main], {
    cwd: root,
    env: env({ ...credsEnv(name), ...extra }),
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  children.add(child);
  child.once('exit', () => children.delete(child));
  return { child, logFile };
}

async function startService(name, main, extra, readyText) {
  await waitUntilReady(start(name, main, extra), name, readyText);
}

function runCli(args) {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [mains.cli, ...args], {
      cwd: root,
      env: env(credsEnv('cli')),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    c.stdout.on('data', (d) => (out += d));
    c.stderr.on('data', (d) => (out += d));
    c.once('exit', (code) => resolve({ code, out }));
  });
}

const varz = async () => (await fetch(`http://127.0.0.1:${monitor}/varz`)).json();
/** NATS messages of the closed connections named `granule-cli`, by connection id. */
async function cliConnections() {
  const body = await (await fetch(`http://127.0.0.1:${monitor}/connz?state=closed&limit=1000`)).json();
  return new Map(
    (body.connections ?? []).filter((c) => c.name === 'granule-cli').map((c) => [c.cid, c.in_msgs + c.out_msgs]),
  );
}
async function commits() {
  const r = await admin(`SELECT xact_commit::bigint AS n FROM pg_stat_database WHERE datname = $1`, [dbName]);
  return Number(r.rows[0].n);
}

/** One deployment through the CLI (`watch`: with --watch), measured; resolves once the run has ended. */
async function measured(watcher, runId, watch) {
  const ended = new Promise((resolve) => {
    const sub = watcher.subscribe(subjects.events.forRun(runId), {
      callback: (_err, msg) => {
        const type = msg.json().type;
        if (['DeploymentSucceeded', 'DeploymentFailed', 'DeploymentStopped', 'DeploymentRefused'].includes(type)) {
          sub.unsubscribe();
          resolve(type);
        }
      },
    });
  });
  const queries = {};
  const counter = watcher.subscribe(`${prefix}.runs.>`, {
    callback: (_err, msg) =>
      (queries[msg.subject.slice(prefix.length + 1)] = (queries[msg.subject.slice(prefix.length + 1)] ?? 0) + 1),
  });
  await watcher.flush();
  const connsBefore = await cliConnections();
  const varzBefore = await varz();
  const commitsBefore = await commits();
  const t0 = Date.now();
  const cli = await runCli([
    'deploy',
    '--tasks',
    path.join(work, 'tasks.yaml'),
    '--nodes',
    path.join(work, 'nodes.yaml'),
    '--run-id',
    runId,
    ...(watch ? ['--watch'] : []),
  ]);
  if (cli.code !== 0)
    throw new Error(`granule deploy${watch ? ' --watch' : ''} failed (${cli.code}): ${cli.out.slice(-2000)}`);
  let limit;
  const end = await Promise.race([
    ended,
    new Promise((resolve) => (limit = setTimeout(() => resolve('no end in 10 minutes'), 600_000))),
  ]);
  clearTimeout(limit);
  if (end !== 'DeploymentSucceeded') throw new Error(`run ${runId} ended with ${end}`);
  const seconds = (Date.now() - t0) / 1000;
  await sleep(1000);
  const varzAfter = await varz();
  const cliMsgs = [...(await cliConnections())].filter(([cid]) => !connsBefore.has(cid)).reduce((a, [, n]) => a + n, 0);
  counter.unsubscribe();
  // Idle backends report their transactions within 10 s (PostgreSQL's PGSTAT_IDLE_INTERVAL).
  await sleep(11_000);
  const commitsAfter = await commits();
  // What the bench's listener was sent is not the CLI's doing.
  return {
    seconds,
    cliMsgs,
    queries,
    serverMsgs: varzAfter.in_msgs + varzAfter.out_msgs - varzBefore.in_msgs - varzBefore.out_msgs,
    commits: commitsAfter - commitsBefore,
    lines: cli.out.split('\n').length,
  };
}

let cleaned = false;
async function cleanup() {
  if (cleaned) return;
  cleaned = true;
  await stopChildren(children, 5000);
  const quiet = (p) => p.catch((err) => log(`cleanup: ${err.message}`));
  await quiet(
    (async () => {
      const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
    })(),
  );
  if (secured) await quiet(secured.stop());
  else if (nats) await quiet(nats.stop());
  if (dbCreated) await quiet(admin(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`));
  rmSync(work, { recursive: true, force: true });
}

async function main() {
  monitor = await freePort();
  if (AUTH) {
    secured = await startSecureServers({
      work,
      prefix,
      identities: controlPlaneIdentities(uids),
      natsSettings: [`http_port: ${monitor}`],
    });
    nats = secured.nats;
    REDIS_URL = secured.redisUrl;
  } else nats = await startPrivateNats({ settings: [`http_port: ${monitor}`] });
  await admin(`CREATE DATABASE "${dbName}"`);
  dbCreated = true;
  log(
    `nats-server ${nats.url} (${secured ? 'authorization on, every process with its own credential' : 'BENCH_AUTH=0: no authorization'}; monitoring on ${monitor}), database ${dbName}, prefix ${prefix}, CLI from ${CLI_DIST}`,
  );
  await startService(
    'graph-planner',
    mains.planner,
    { GRANULE_DATABASE_URL: dbUrl, GRANULE_RUN_MIGRATIONS: '1' },
    'answering',
  );
  await startService(
    'orchestrator',
    mains.orchestrator,
    {
      GRANULE_DATABASE_URL: dbUrl,
      GRANULE_RUN_MIGRATIONS: '1',
      GRANULE_MAX_BUSY_NODES: String(Math.max(200, NODES)),
      GRANULE_HEARTBEAT_SECONDS: '2',
      GRANULE_PRESENCE_TTL_SECONDS: '10',
    },
    '"msg":"orchestrator started"',
  );
  await startService(
    'hollow-nodes',
    mains.hollow,
    { HOLLOW_UIDS: uids.join(','), GRANULE_HEARTBEAT_SECONDS: '2' },
    'hollow nodes ready',
  );
  writeFileSync(
    path.join(work, 'nodes.yaml'),
    `nodes:\n${uids.map((u) => `  - {uid: '${u}', name: ${u}, roles: [bench]}`).join('\n')}\n`,
  );
  let tasks = '';
  for (let t = 1; t <= TASKS; t++) {
    const req = t === 1 ? 'deploy_start' : `t${t - 1}`;
    tasks += `- {id: t${t}, type: shell, version: 2.0.0, roles: [bench], requires: [${req}], parameters: {cmd: 'true', timeout: 60, retries: 0}}\n`;
  }
  writeFileSync(path.join(work, 'tasks.yaml'), tasks);

  // The bench's listener counts every run query: an admin's credential.
  const watcher = await connectNats(
    { natsUrl: nats.url, ...(secured ? { natsCreds: secured.credsOf('bench-admin') } : {}) },
    'granule-bench-watch-cost',
  );
  try {
    // A first run warms the services up (their first plans, prepared statements); not counted.
    await measured(watcher, `wcost-${id}-warmup`, false);
    const plain = await measured(watcher, `wcost-${id}-plain`, false);
    const watched = await measured(watcher, `wcost-${id}-watched`, true);
    const q = (r) =>
      Object.entries(r.queries)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'none';
    const sum = (r) => Object.values(r.queries).reduce((a, b) => a + b, 0);
    console.log(
      `watch cost: ${NODES} hollow nodes x ${TASKS} chained no-op tasks = ${NODES * TASKS} task runs (CLI from ${path.relative(root, CLI_DIST) || '.'})`,
    );
    for (const [name, r] of [
      ['deploy (no watch)', plain],
      ['deploy --watch', watched],
    ])
      console.log(
        `${name.padEnd(18)} ${r.seconds.toFixed(1)} s   CLI NATS messages ${r.cliMsgs}   queries ${sum(r)} (${q(r)})   server NATS messages ${r.serverMsgs}   database transactions ${r.commits}`,
      );
    console.log(
      `the watch's share  CLI NATS messages ${watched.cliMsgs - plain.cliMsgs}   queries ${sum(watched) - sum(plain)}   server NATS messages ${watched.serverMsgs - plain.serverMsgs}   database transactions ${watched.commits - plain.commits} (all processes; noisy: the runs differ in length)`,
    );
  } finally {
    await watcher.close();
  }
}

for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => void cleanup().then(() => process.exit(130)));
try {
  await main();
  await cleanup();
} catch (err) {
  process.stderr.write(`watch-cost benchmark failed: ${err.message}\n`);
  await cleanup();
  process.exitCode = 1;
}
