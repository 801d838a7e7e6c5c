// npm run bench:fleet-10k — a 10,000-node deployment through the real services (graph-planner,
// orchestrator, PostgreSQL, NATS JetStream, Redis) on hollow nodes (test/bench/hollow-nodes.mjs,
// ADR 0012): every node registers, gets its own dispatch consumer, beats, pulls its own
// dispatches and reports on its own result subject, as an agent does, and runs no process
// (ADR 0014).
//
// Two phases, each its own run:
//   1. end to end: BENCH_NODES (10,000) x BENCH_TASKS (10) chained no-op shell tasks deploy to the
//      end; prints plan, accept, first dispatch, dispatch rate, total time.
//   2. the large plan: the synthetic release (test/bench/synthetic-release.mjs) with
//      BENCH_PLAN_TASKS (300; 0 skips) tasks, every deploy task on every node (~274 per node at
//      300: 2.7M instances at 10,000 nodes); waits for the plan to be accepted and
//      BENCH_PLAN_DISPATCHES (20,000) tasks to have run, prints the times and rate, stops the run,
//      and with BENCH_GRAPH=1 (default) prints the run's graph (`granule graph --run -o json`,
//      read page by page) into a counter, checking it is one JSON array of every instance.
// Peak RSS of the orchestrator and graph-planner are sampled every 250 ms per phase (and VmHWM).
//
//   BENCH_HOLLOW_PROCS (2) hollow-node processes;
//   BENCH_AUTH=0 turns NATS authorization off (below); only then may nodes share a connection,
//   BENCH_PER_CONNECTION (500 with BENCH_AUTH=0) nodes per connection;
//   BENCH_PROFILE=1 writes a V8 CPU profile of the orchestrator to tmp/bench-profiles/ (BENCH_PROFILE_DIR);
//   BENCH_HEAP_MB (unset: Node's default heap) sets --max-old-space-size of graph-planner and the
//   orchestrator; BENCH_TIMEOUT_S (3600) the overall time limit; BENCH_KEEP=1 keeps the logs.
//
// Everything runs on a private nats-server (its own port and store: the bench makes 10,000
// JetStream consumers) and a private Redis, with a database of its own; all of it is removed at
// the end, also on failure, Ctrl-C or the time limit. By default as an installation runs: NATS
// with authorization on, the services and the CLI each with their own credential, and every
// hollow node enrolled with a credential bound to it (the orchestrator takes a node's
// registration only from that node's credential), on a connection of its own, so 10,000
// connections; Redis with a password. BENCH_AUTH=0: no credentials, nodes sharing connections.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  adminQuery,
  controlPlaneIdentities,
  sleep,
  startSecureServers,
  stopChildren,
  waitFor as waitEvery,
  waitUntilReady,
  wholeNumberOption,
} from './bench-support.mjs';
import { writeNodes, writeSyntheticRelease } from './synthetic-release.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const { Client } = require('pg');

const ADMIN_URL = process.env.GRANULE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const NODES = wholeNumberOption('BENCH_NODES', 10_000);
const TASKS = wholeNumberOption('BENCH_TASKS', 10, { min: 0 });
const PLAN_TASKS = wholeNumberOption('BENCH_PLAN_TASKS', 300, { min: 0 });
const PLAN_DISPATCHES = wholeNumberOption('BENCH_PLAN_DISPATCHES', 20_000);
const HOLLOW_PROCS = wholeNumberOption('BENCH_HOLLOW_PROCS', 2);
const AUTH = process.env.BENCH_AUTH !== '0';
// A connection carries one credential: with authorization every node has its own.
const PER_CONNECTION = wholeNumberOption('BENCH_PER_CONNECTION', AUTH ? 1 : 500);
if (AUTH && PER_CONNECTION > 1) {
  process.stderr.write(
    'BENCH_PER_CONNECTION > 1 needs BENCH_AUTH=0: with authorization each hollow node connects with its own credential\n',
  );
  process.exit(2);
}
const HEAP_MB = process.env.BENCH_HEAP_MB ? wholeNumberOption('BENCH_HEAP_MB', 4096) : undefined;
const TIMEOUT_S = wholeNumberOption('BENCH_TIMEOUT_S', 3600);
const GRAPH = process.env.BENCH_GRAPH !== '0';

const log = (msg) => process.stderr.write(`[fleet] ${new Date().toISOString().slice(11, 19)} ${msg}\n`);
const mib = (kb) => `${(kb / 1024).toLocaleString('en', { maximumFractionDigits: kb < 10240 ? 1 : 0 })} MiB`;
const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;

const mains = {
  planner: path.join(root, 'dist/apps/graph-planner/src/main.js'),
  orchestrator: path.join(root, 'dist/apps/orchestrator/src/main.js'),
  hollow: path.join(root, 'test/bench/hollow-nodes.mjs'),
  cli: path.join(root, 'dist/apps/cli/src/main.js'),
};
for (const file of [path.join(root, 'dist/.stamp'), ...Object.values(mains)]) {
  if (!existsSync(file)) {
    process.stderr.write(`dist/ is not built (missing ${path.relative(root, file)}): run npm run build\n`);
    process.exit(1);
  }
}
const { startPrivateNats, startPrivateRedis, redactUrl } = require(
  path.join(root, 'dist/libs/infra/messaging/src/index.js'),
);

const id = randomBytes(4).toString('hex');
const prefix = `fleet${id}`;
const dbName = `granule_bench_fleet_${id}`;
const dbUrl = Object.assign(new URL(ADMIN_URL), { pathname: `/${dbName}` }).toString();
const work = mkdtempSync(path.join(tmpdir(), 'granule-bench-fleet-'));
const children = new Set();
/** Besides the services: the private nats-server and the hollow-node processes, whose CPU is printed too. */
const cpuParties = {};
const servers = [];
let NATS_URL;
let REDIS_URL;
/** With BENCH_AUTH (the default): the trust store, the servers and every process's credential. */
let secured;

/** The credential variables of a process by its name (none with BENCH_AUTH=0); each hollow node has its own. */
function credsEnv(name) {
  if (!secured) return {};
  if (name.startsWith('hollow-nodes')) return { GRANULE_NATS_CREDS_DIR: secured.credsDir };
  return { GRANULE_NATS_CREDS: secured.credsOf(name) };
}
let dbCreated = false;

const admin = (sql) => adminQuery(ADMIN_URL, sql);

function baseEnv() {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GRANULE_') && k !== 'NODE_OPTIONS') env[k] = v;
  return {
    ...env,
    GRANULE_NATS_URL: NATS_URL,
    GRANULE_REDIS_URL: REDIS_URL,
    GRANULE_SUBJECT_PREFIX: prefix,
    XDG_CONFIG_HOME: work,
    GRANULE_HEALTH_PORT: '0',
  };
}

function start(name, main, env, nodeFlags = []) {
  const logFile = path.join(work, `${name}.log`);
  const fd = openSync(logFile, 'a');
  const child = spawn(process.execPath, [...nodeFlags, main], {
    cwd: root,
    env: { ...baseEnv(), ...credsEnv(name), ...env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  child.granuleName = name;
  children.add(child);
  child.once('exit', () => children.delete(child));
  return { child, logFile };
}

// Its checks read the database: four a second are enough.
const waitFor = (what, check, timeoutMs, everyMs = 250) => waitEvery(what, check, timeoutMs, everyMs);

function startService(name, main, env, readyText, timeoutMs = 60_000, nodeFlags = []) {
  return waitUntilReady(start(name, main, env, nodeFlags), name, readyText, timeoutMs);
}

function runCli(args, { stdoutTo } = {}) {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [mains.cli, ...args], {
      cwd: root,
      env: { ...baseEnv(), ...credsEnv('bench-operator') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    if (stdoutTo) c.stdout.on('data', stdoutTo);
    else c.stdout.on('data', (d) => (out += d));
    c.stderr.on('data', (d) => (err += d));
    c.once('exit', (code) => resolve({ code, out, err }));
  });
}

/** Resident memory (KiB) now and at its peak (VmHWM) of a process, from /proc. */
function memoryOf(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return { rss: 0, hwm: 0 };
  }
}

/** Samples the RSS of the named processes every 250 ms; `peaks()` gives the highest seen since `reset()`. */
function rssSampler(named) {
  let peaks = {};
  const timer = setInterval(() => {
    for (const [name, child] of Object.entries(named)) {
      const { rss } = memoryOf(child.pid);
      peaks[name] = Math.max(peaks[name] ?? 0, rss);
    }
  }, 250);
  timer.unref();
  return {
    peaks: () => ({ ...peaks }),
    reset: () => (peaks = {}),
    stop: () => clearInterval(timer),
  };
}

const TERMINAL = ['DeploymentSucceeded', 'DeploymentFailed', 'DeploymentStopped', 'DeploymentRefused'];

/** Times of a run's milestones from the event log (ms since the epoch). */
async function milestones(db, runId) {
  const r = await db.query(
    `SELECT
        min(created_at) FILTER (WHERE type = 'DeploymentRequested') AS requested,
        min(created_at) FILTER (WHERE type = 'PlanAccepted') AS accepted,
        min(created_at) FILTER (WHERE type = 'TaskDispatched') AS first_dispatch,
        max(created_at) FILTER (WHERE type = 'TaskDispatched') AS last_dispatch,
        max(created_at) FILTER (WHERE type = 'TaskSucceeded') AS last_success,
        max(created_at) AS last,
        count(*) FILTER (WHERE type = 'TaskDispatched')::int AS dispatched,
        count(*) FILTER (WHERE type = 'TaskSucceeded')::int AS succeeded,
        count(*)::int AS events
       FROM granule_events WHERE stream_id = $1`,
    [`run-${runId}`],
  );
  const row = r.rows[0];
  const t = (v) => (v ? new Date(v).getTime() : undefined);
  return {
    requested: t(row.requested),
    accepted: t(row.accepted),
    firstDispatch: t(row.first_dispatch),
    lastDispatch: t(row.last_dispatch),
    lastSuccess: t(row.last_success),
    last: t(row.last),
    dispatched: row.dispatched,
    succeeded: row.succeeded,
    events: row.events,
  };
}

async function lastEventType(db, runId) {
  const r = await db.query(
    `SELECT type FROM granule_events WHERE stream_id = $1 ORDER BY stream_version DESC LIMIT 1`,
    [`run-${runId}`],
  );
  return r.rows[0]?.type;
}

async function planOf(db, runId) {
  const r = await db.query(
    `SELECT data->>'planId' AS plan_id, (data->>'instances')::int AS instances FROM granule_events
      WHERE stream_id = $1 AND type = 'PlanAccepted'`,
    [`run-${runId}`],
  );
  return r.rows[0];
}

function chainedTasks(file, count) {
  let tasks = '';
  for (let t = 1; t <= count; t++) {
    const name = `t${String(t).padStart(3, '0')}`;
    const req = t === 1 ? 'deploy_start' : `t${String(t - 1).padStart(3, '0')}`;
    tasks += `- {id: ${name}, type: shell, version: 2.0.0, roles: '*', requires: [${req}], parameters: {cmd: 'true', timeout: 60, retries: 0}}\n`;
  }
  writeFileSync(file, tasks);
}

async function deploy(runId, tasksFile) {
  const started = Date.now();
  const r = await runCli(['deploy', '--tasks', tasksFile, '--nodes', path.join(work, 'nodes.yaml'), '--run-id', runId]);
  if (r.code !== 0) throw new Error(`granule deploy failed (${r.code}): ${`${r.out}${r.err}`.slice(0, 2000)}`);
  return started;
}

function phaseMemory(sampler, named) {
  const peaks = sampler.peaks();
  return Object.keys(named)
    .map((n) => `${n} ${mib(peaks[n] ?? 0)} (VmHWM ${mib(memoryOf(named[n].pid).hwm)})`)
    .join('   ');
}

async function endToEnd(db, sampler, named) {
  const runId = `fleet-${id}-e2e`;
  chainedTasks(path.join(work, 'chain.yaml'), TASKS);
  sampler.reset();
  const cpu0 = cpuOf(named);
  const sent = await deploy(runId, path.join(work, 'chain.yaml'));
  log(`phase 1: deployed ${NODES} x ${TASKS}; waiting for the run to end`);
  let lastLog = Date.now();
  const end = await waitFor(
    'the end-to-end run to end',
    async () => {
      const type = await lastEventType(db, runId);
      if (Date.now() - lastLog > 15_000) {
        lastLog = Date.now();
        const m = await milestones(db, runId);
        log(`  ${m.succeeded} of ${NODES * TASKS} task runs succeeded (${type})`);
      }
      return TERMINAL.includes(type) ? type : undefined;
    },
    TIMEOUT_S * 1000,
    1000,
  );
  const m = await milestones(db, runId);
  const cpu1 = cpuOf(named);
  console.log(`phase 1, end to end: ${NODES.toLocaleString('en')} hollow nodes x ${TASKS} chained no-op shell tasks`);
  console.log(
    `  run ended:                 ${end}, ${m.succeeded.toLocaleString('en')} task runs succeeded, ${m.events.toLocaleString('en')} run events`,
  );
  console.log(
    `  deploy command -> planned and accepted: ${secs(m.accepted - sent)}   (requested -> accepted ${secs(m.accepted - m.requested)})`,
  );
  console.log(`  accepted -> first dispatch: ${secs(m.firstDispatch - m.accepted)}`);
  console.log(
    `  first dispatch -> last task succeeded: ${secs(m.lastSuccess - m.firstDispatch)}   -> ${Math.round(m.dispatched / ((m.lastDispatch - m.firstDispatch) / 1000))} dispatches/s, ${Math.round(m.succeeded / ((m.lastSuccess - m.firstDispatch) / 1000))} task runs/s`,
  );
  console.log(`  total, deploy command -> last event: ${secs(m.last - sent)}`);
  console.log(`  peak RSS:                  ${phaseMemory(sampler, named)}`);
  console.log(
    `  CPU (s):                   ${Object.keys(cpu1)
      .map((n) => `${n} ${((cpu1[n] - cpu0[n]) / 1000).toFixed(1)}`)
      .join('   ')}`,
  );
  if (end !== 'DeploymentSucceeded') {
    await whyEnded(db, runId);
    process.exitCode = 1;
  }
}

/** Prints the first events of a run that are not a task's dispatch, start or success: why it ended as it did. */
async function whyEnded(db, runId) {
  const r = await db.query(
    `SELECT stream_version, created_at, type, data FROM granule_events
      WHERE stream_id = $1 AND type NOT IN ('TaskDispatched', 'TaskStarted', 'TaskSucceeded', 'NodeStatusChanged')
      ORDER BY stream_version LIMIT 12`,
    [`run-${runId}`],
  );
  console.log(`  run ${runId} did not succeed; its other events:`);
  for (const e of r.rows)
    console.log(
      `    #${e.stream_version} ${new Date(e.created_at).toISOString().slice(11, 23)} ${e.type} ${JSON.stringify(e.data).slice(0, 300)}`,
    );
}

/** CPU time (ms) of the named processes and of the other parties (`cpuParties`) from /proc. */
function cpuOf(named) {
  const out = {};
  for (const [name, child] of Object.entries({ ...named, ...cpuParties })) {
    try {
      const stat = readFileSync(`/proc/${child.pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out[name] = (Number(f[11]) + Number(f[12])) * 10;
    } catch {
      out[name] = 0;
    }
  }
  return out;
}

async function largePlan(db, sampler, named) {
  const runId = `fleet-${id}-large`;
  const releaseDir = path.join(work, 'release');
  const taskCount = writeSyntheticRelease(releaseDir, { taskCount: PLAN_TASKS, everyNode: true });
  sampler.reset();
  const cpu0 = cpuOf(named);
  const sent = await deploy(runId, path.join(releaseDir, 'deployment_tasks.yaml'));
  log(`phase 2: deployed ${NODES} x the ${taskCount}-task synthetic release; waiting for its plan`);
  await waitFor(
    'the large plan to be accepted',
    async () => {
      const type = await lastEventType(db, runId);
      if (TERMINAL.includes(type)) throw new Error(`the large run ended ${type} before its plan was accepted`);
      return (await planOf(db, runId)) !== undefined;
    },
    TIMEOUT_S * 1000,
    1000,
  );
  const plan = await planOf(db, runId);
  log(`phase 2: plan ${plan.plan_id} accepted (${plan.instances} instances); waiting for ${PLAN_DISPATCHES} task runs`);
  const want = Math.min(PLAN_DISPATCHES, plan.instances);
  await waitFor(
    `${want} task runs of the large plan`,
    async () => {
      const type = await lastEventType(db, runId);
      if (TERMINAL.includes(type)) throw new Error(`the large run ended ${type}`);
      return (await milestones(db, runId)).succeeded >= want;
    },
    TIMEOUT_S * 1000,
    1000,
  );
  const m = await milestones(db, runId);
  const peaksRun = phaseMemory(sampler, named);
  const cpu1 = cpuOf(named);
  const stopSent = Date.now();
  const stop = await runCli(['stop', runId]);
  if (stop.code !== 0) log(`granule stop failed: ${stop.out}${stop.err}`);
  const stopped = await waitFor(
    'the large run to stop',
    async () => TERMINAL.includes(await lastEventType(db, runId)),
    300_000,
    1000,
  ).catch((err) => (log(err.message), false));
  const stopMs = Date.now() - stopSent;
  const sizes = await db.query(`SELECT octet_length(document) AS bytes FROM granule_plans WHERE id = $1`, [
    plan.plan_id,
  ]);
  console.log('');
  console.log(
    `phase 2, the large plan: ${NODES.toLocaleString('en')} hollow nodes x the ${taskCount}-task synthetic release, every deploy task on every node`,
  );
  console.log(
    `  plan: ${Number(plan.instances).toLocaleString('en')} instances, stored as ${mib(Number(sizes.rows[0].bytes) / 1024)} of gzip`,
  );
  console.log(
    `  deploy command -> planned and accepted: ${secs(m.accepted - sent)}   (requested -> accepted ${secs(m.accepted - m.requested)})`,
  );
  const planned = new RegExp(`planned ${plan.plan_id}: .* (\\d+) ms`).exec(
    readFileSync(path.join(work, 'graph-planner.log'), 'utf8'),
  );
  if (planned)
    console.log(
      `  graph-planner planned it in ${secs(Number(planned[1]))}; then it was stored, and loaded by the orchestrator before it was accepted`,
    );
  console.log(`  accepted -> first dispatch: ${secs(m.firstDispatch - m.accepted)}`);
  console.log(
    `  first ${m.succeeded.toLocaleString('en')} task runs in ${secs(m.lastSuccess - m.firstDispatch)}: ${Math.round(m.dispatched / ((m.lastDispatch - m.firstDispatch) / 1000))} dispatches/s, ${Math.round(m.succeeded / ((m.lastSuccess - m.firstDispatch) / 1000))} task runs/s`,
  );
  console.log(
    `  stopped with granule stop: ${stopped ? `${await lastEventType(db, runId)} after ${secs(stopMs)}` : 'did not end in 5 min'}`,
  );
  console.log(`  peak RSS (plan, load, first runs): ${peaksRun}`);
  console.log(
    `  CPU (s):                   ${Object.keys(cpu1)
      .map((n) => `${n} ${((cpu1[n] - cpu0[n]) / 1000).toFixed(1)}`)
      .join('   ')}`,
  );
  if (GRAPH) await graphOf(runId, plan.instances, sampler, named);
}

/** `granule graph --run RUN -o json` into a counter: one JSON array of every instance, read page by page. */
async function graphOf(runId, instances, sampler, named) {
  sampler.reset();
  const t0 = Date.now();
  let bytes = 0;
  let entries = 0;
  let head = '';
  let tail = '';
  let carry = '';
  const r = await runCli(['graph', '--run', runId, '-o', 'json'], {
    stdoutTo: (d) => {
      const text = d.toString('utf8');
      if (head.length < 2) head += text.slice(0, 2);
      tail = (tail + text).slice(-3);
      bytes += d.length;
      // Each entry of the array opens with a line of two spaces and a brace.
      entries += ((carry + text).match(/\n {2}\{/g) ?? []).length;
      carry = text.slice(-3);
    },
  });
  const ms = Date.now() - t0;
  if (r.code !== 0) throw new Error(`granule graph failed (${r.code}): ${r.err.slice(-2000)}`);
  const whole = head.startsWith('[') && tail === '\n]\n' && entries === Number(instances);
  console.log(
    `  granule graph --run -o json: ${mib(bytes / 1024)} in ${secs(ms)}, ${entries.toLocaleString('en')} entries${whole ? ', one JSON array of every instance' : ` — NOT one array of the ${instances} instances (head ${JSON.stringify(head)}, tail ${JSON.stringify(tail)})`}`,
  );
  console.log(`  peak RSS while it was read: ${phaseMemory(sampler, named)}`);
}

let cleaned = false;
async function cleanup() {
  if (cleaned) return;
  cleaned = true;
  await stopChildren(children, 10_000);
  const quiet = (p) => p.catch((err) => log(`cleanup: ${err.message}`));
  // The private nats-server goes with its store: no stream to delete one by one.
  if (secured) await quiet(secured.stop());
  for (const server of servers) await quiet(server.stop());
  if (dbCreated) await quiet(admin(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`));
  if (process.env.BENCH_KEEP === '1') log(`kept the process logs in ${work}`);
  else rmSync(work, { recursive: true, force: true });
}

async function main() {
  await admin(`CREATE DATABASE "${dbName}"`);
  dbCreated = true;
  const uids = Array.from({ length: NODES }, (_, i) => `node-${i + 1}`);
  let nats;
  if (AUTH) {
    const t = Date.now();
    const identities = controlPlaneIdentities(uids);
    secured = await startSecureServers({
      work,
      prefix,
      identities,
    });
    nats = secured.nats;
    log(`trust store and ${identities.length.toLocaleString('en')} credentials in ${secs(Date.now() - t)}`);
  } else {
    nats = await startPrivateNats();
    servers.push(nats);
    servers.push(await startPrivateRedis());
  }
  NATS_URL = nats.url;
  REDIS_URL = secured?.redisUrl ?? servers[1].url;
  log(
    `database ${dbName}, private NATS ${NATS_URL} (${AUTH ? 'authorization on' : 'BENCH_AUTH=0: no authorization'}), private Redis ${redactUrl(REDIS_URL)}, prefix ${prefix}`,
  );
  const heap = HEAP_MB ? [`--max-old-space-size=${HEAP_MB}`] : [];
  // BENCH_PROFILE=1: a V8 CPU profile of the orchestrator, written to BENCH_PROFILE_DIR when it stops.
  const profile =
    process.env.BENCH_PROFILE === '1'
      ? [
          '--cpu-prof',
          `--cpu-prof-dir=${path.resolve(process.env.BENCH_PROFILE_DIR ?? path.join(root, 'tmp/bench-profiles'))}`,
          '--cpu-prof-name=fleet-orchestrator.cpuprofile',
        ]
      : [];
  const planner = await startService(
    'graph-planner',
    mains.planner,
    { GRANULE_DATABASE_URL: dbUrl, GRANULE_RUN_MIGRATIONS: '1' },
    'answering',
    60_000,
    heap,
  );
  const orchestrator = await startService(
    'orchestrator',
    mains.orchestrator,
    {
      GRANULE_DATABASE_URL: dbUrl,
      GRANULE_RUN_MIGRATIONS: '1',
      GRANULE_MAX_BUSY_NODES: String(NODES),
      // 10,000 beats every 15 s: 667 presence writes a second.
      GRANULE_HEARTBEAT_SECONDS: '15',
      GRANULE_PRESENCE_TTL_SECONDS: '60',
    },
    '"msg":"orchestrator started"',
    60_000,
    [...heap, ...profile],
  );
  const named = { orchestrator, 'graph-planner': planner };
  const sampler = rssSampler(named);

  writeNodes(path.join(work, 'nodes.yaml'), NODES);
  const t0 = Date.now();
  const per = Math.ceil(NODES / HOLLOW_PROCS);
  const hollows = [];
  for (let p = 0; p < HOLLOW_PROCS; p++) {
    const file = path.join(work, `uids-${p}.txt`);
    writeFileSync(file, uids.slice(p * per, (p + 1) * per).join('\n'));
    hollows.push(
      startService(
        `hollow-nodes-${p}`,
        mains.hollow,
        {
          HOLLOW_UIDS_FILE: file,
          HOLLOW_NODES_PER_CONNECTION: String(PER_CONNECTION),
          GRANULE_HEARTBEAT_SECONDS: '15',
        },
        'hollow nodes ready',
        TIMEOUT_S * 1000,
      ),
    );
  }
  (await Promise.all(hollows)).forEach((child, p) => (cpuParties[`hollow-nodes-${p}`] = child));
  cpuParties['nats-server'] = { pid: nats.pid };
  console.log(
    `${NODES.toLocaleString('en')} hollow nodes registered, present and pulling in ${secs(Date.now() - t0)} (${HOLLOW_PROCS} processes, ${PER_CONNECTION} nodes per NATS connection, a dispatch consumer each)`,
  );
  console.log(`  peak RSS so far: ${phaseMemory(sampler, named)}`);
  console.log('');
  const db = new Client({ connectionString: dbUrl });
  await db.connect();
  try {
    if (TASKS > 0) await endToEnd(db, sampler, named);
    if (PLAN_TASKS > 0) await largePlan(db, sampler, named);
  } finally {
    sampler.stop();
    await db.end();
  }
}

const deadline = setTimeout(
  () => {
    log(`time limit of ${TIMEOUT_S} s reached; cleaning up`);
    void cleanup().then(() => process.exit(1));
  },
  TIMEOUT_S * 1000 + 120_000,
);
deadline.unref();
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => void cleanup().then(() => process.exit(130)));

try {
  await main();
  await cleanup();
} catch (err) {
  process.stderr.write(`fleet benchmark failed: ${err.message}\n`);
  await cleanup();
  process.exitCode = 1;
}
process.exit();
