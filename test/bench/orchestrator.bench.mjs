// npm run bench:orchestrator — N local node agents x M no-op shell tasks (`true`) chained on
// each node, end to end through the real services (graph-planner, orchestrator, agents,
// PostgreSQL, NATS JetStream, Redis). Prints task runs per second, event-log rows written per
// second, and the per-task overhead (TaskSucceeded - TaskDispatched - the agent's durationMs,
// from the event log's commit times) next to a bare process spawn measured in the same run, and
// what the first agent logs as handledMs (dispatch delivered -> outcome reported).
//
//   node test/bench/orchestrator.bench.mjs [--agents N] [--tasks M]   (or BENCH_AGENTS / BENCH_TASKS)
//   BENCH_PROFILE=1 also writes V8 CPU profiles of the orchestrator and one agent to tmp/bench-profiles/
//   BENCH_SPAWN_HELPER=native|node|auto sets the agents' GRANULE_SPAWN_HELPER (default auto: native when built;
//   node: the agents start tasks with their own child_process, so there is no helper to count)
//   BENCH_AGENT_NODE_FLAGS='--flag ...' passes Node.js flags to the agent processes (experiments)
//   BENCH_HOLLOW=0 skips the last run, the control plane alone with hollow nodes in place of the
//   agents (test/bench/hollow-nodes.mjs, ADR 0012)
//   BENCH_WARMUP=0 measures the agents' first run instead of their second (the first, right after
//   they start, pays for compiling their code; agents are long-lived)
//   BENCH_AUTH=0 runs on the machine's NATS and Redis as they are (no authorization, no password);
//   by default the bench runs as an installation does: a trust store of its own, a private
//   nats-server with authorization on and a private Redis with a password, every process with its
//   own credential (signed commands, signed dispatches), so the figures include what that costs
//
// Everything it creates (database, JetStream streams, Redis keys, temp dir, processes) is
// removed at the end, also on failure, Ctrl-C or the overall time limit (BENCH_TIMEOUT_S, 900).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, tmpdir } from 'node:os';
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
const { Client } = require('pg');
const { Redis } = require('ioredis');

const ADMIN_URL = process.env.GRANULE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
let NATS_URL = process.env.GRANULE_NATS_URL ?? 'nats://127.0.0.1:4222';
let REDIS_URL = process.env.GRANULE_REDIS_URL ?? 'redis://127.0.0.1:6379';
const AUTH = process.env.BENCH_AUTH !== '0';

const AGENTS = wholeNumberOption('BENCH_AGENTS', 100, { flag: '--agents' });
const TASKS = wholeNumberOption('BENCH_TASKS', 20, { flag: '--tasks' });
const TIMEOUT_S = wholeNumberOption('BENCH_TIMEOUT_S', 900, { flag: '--timeout' });
const WARMUP = process.env.BENCH_WARMUP !== '0';
const HOLLOW = process.env.BENCH_HOLLOW !== '0';
const SPAWN_HELPER = process.env.BENCH_SPAWN_HELPER ?? 'auto';
const PROFILE_DIR =
  process.env.BENCH_PROFILE === '1'
    ? path.resolve(process.env.BENCH_PROFILE_DIR ?? path.join(root, 'tmp/bench-profiles'))
    : undefined;
const log = (msg) => process.stderr.write(`[bench] ${msg}\n`);

const mains = {
  planner: path.join(root, 'dist/apps/graph-planner/src/main.js'),
  orchestrator: path.join(root, 'dist/apps/orchestrator/src/main.js'),
  agent: path.join(root, 'dist/apps/node-agent/src/main.js'),
  hollow: path.join(root, 'test/bench/hollow-nodes.mjs'),
  cli: path.join(root, 'dist/apps/cli/src/main.js'),
};
for (const file of [path.join(root, 'dist/.stamp'), ...Object.values(mains)]) {
  if (!existsSync(file)) {
    process.stderr.write(
      `dist/ is not built (missing ${path.relative(root, file)}): run npm run build (npm run bench:orchestrator does)\n`,
    );
    process.exit(1);
  }
}
const { NATIVE_SPAWN_HELPER, SPAWN_HELPER_CHOICES } = require(
  path.join(root, 'dist/libs/infra/task-runners/src/index.js'),
);
if (!SPAWN_HELPER_CHOICES.includes(SPAWN_HELPER)) {
  process.stderr.write(
    `BENCH_SPAWN_HELPER: expected one of ${SPAWN_HELPER_CHOICES.join(', ')}, got ${JSON.stringify(SPAWN_HELPER)}\n`,
  );
  process.exit(2);
}
const helperKind = SPAWN_HELPER === 'auto' ? (existsSync(NATIVE_SPAWN_HELPER) ? 'native' : 'node') : SPAWN_HELPER;
const { connectNats, deleteExecutionStreams } = require(path.join(root, 'dist/libs/infra/messaging/src/index.js'));

const id = randomBytes(4).toString('hex');
const prefix = `bench${id}`;
const dbName = `granule_bench_${id}`;
const dbUrl = Object.assign(new URL(ADMIN_URL), { pathname: `/${dbName}` }).toString();
const work = mkdtempSync(path.join(tmpdir(), 'granule-bench-orch-'));
const children = new Set();
let dbCreated = false;
/** With BENCH_AUTH (the default): the trust store and the private servers (bench-support.mjs). */
let secured;
const credsOf = (name) => secured?.credsOf(name);

/** A trust store, every process's credential, a nats-server with authorization on and a Redis with a password. */
async function secure(agentUids) {
  secured = await startSecureServers({
    work,
    prefix,
    identities: controlPlaneIdentities(agentUids),
  });
  NATS_URL = secured.natsUrl;
  REDIS_URL = secured.redisUrl;
}

/** GRANULE_NATS_CREDS of a process (none without BENCH_AUTH); the hollow nodes get every agent's. */
function credsEnv(name) {
  if (!secured) return {};
  if (name === 'hollow-nodes') return { GRANULE_NATS_CREDS_DIR: secured.credsDir };
  return { GRANULE_NATS_CREDS: credsOf(name) };
}

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

/** Starts a node process with its output in `<work>/<name>.log`. */
function start(name, main, env) {
  const logFile = path.join(work, `${name}.log`);
  const fd = openSync(logFile, 'a');
  // BENCH_PROFILE=1: V8 CPU profiles of the orchestrator and the first agent, kept in BENCH_PROFILE_DIR.
  const profile =
    PROFILE_DIR && (name === 'orchestrator' || name === 'agent-b1')
      ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`, `--cpu-prof-name=${name}.cpuprofile`]
      : [];
  const nodeFlags =
    name.startsWith('agent-') && process.env.BENCH_AGENT_NODE_FLAGS
      ? process.env.BENCH_AGENT_NODE_FLAGS.split(' ').filter(Boolean)
      : [];
  const child = spawn(process.execPath, [...nodeFlags, ...profile, main], {
    cwd: root,
    env: { ...baseEnv(), ...credsEnv(name), ...env },
    stdio: ['ignore', fd, fd],
  });
  child.granuleRole = name.startsWith('agent-')
    ? 'agent'
    : name === 'graph-planner'
      ? 'planner'
      : name === 'hollow-nodes'
        ? 'hollow'
        : name;
  closeSync(fd);
  children.add(child);
  child.once('exit', () => children.delete(child));
  return { child, logFile };
}

function startService(name, main, env, readyText) {
  return waitUntilReady(start(name, main, env), name, readyText);
}

const TICK_MS = 10; // USER_HZ is 100 on Linux

/**
 * CPU time (ms) used so far by the processes taking part, from /proc: each Granule process's own
 * time (an agent's spawn helper included), the task processes the agents ran (reaped children),
 * PostgreSQL and nats-server.
 * Undefined where there is no /proc.
 */
function cpuSnapshot() {
  const out = { orchestrator: 0, agents: 0, helpers: 0, tasks: 0, postgres: 0, nats: 0, planner: 0, hollow: 0 };
  // The agents' time in the kernel (system time), a part of `agents`; kept apart from the roles.
  const system = { agents: 0 };
  const roles = new Map([...children].map((c) => [c.pid, c.granuleRole]));
  let pids;
  try {
    pids = readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let stat;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const own = (Number(f[11]) + Number(f[12])) * TICK_MS;
    const reaped = (Number(f[13]) + Number(f[14])) * TICK_MS;
    // An agent's child is its spawn helper; what the helper reaped are the task processes.
    const role = roles.get(Number(pid)) ?? (roles.get(Number(f[1])) === 'agent' ? 'helper' : undefined);
    if (role === 'agent' || role === 'helper') {
      out[role === 'agent' ? 'agents' : 'helpers'] += own;
      if (role === 'agent') system.agents += Number(f[12]) * TICK_MS;
      out.tasks += reaped;
    } else if (role === 'orchestrator' || role === 'planner' || role === 'hollow') out[role] += own;
    // The postmaster reaps backends that exit (a closed connection): their time stays counted.
    else if (comm === 'postgres') out.postgres += own + reaped;
    else if (comm === 'nats-server') out.nats += own;
  }
  return { ...out, system };
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Milliseconds from `spawn()` to the exit of `command args`, `runs` times one after another. */
async function bareSpawn(runs, command = '/bin/true', args = []) {
  const out = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    await new Promise((resolve, reject) => {
      const c = spawn(command, args, { stdio: 'ignore' });
      c.once('error', reject);
      c.once('exit', resolve);
    });
    out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return out.sort((a, b) => a - b);
}

function writeInputs(uids) {
  const nodes = `nodes:\n${uids.map((u) => `  - {uid: '${u}', name: ${u}, roles: [bench]}`).join('\n')}\n`;
  let tasks = '';
  for (let t = 1; t <= TASKS; t++) {
    const name = `t${String(t).padStart(3, '0')}`;
    const req = t === 1 ? 'deploy_start' : `t${String(t - 1).padStart(3, '0')}`;
    tasks += `- {id: ${name}, type: shell, version: 2.0.0, roles: [bench], requires: [${req}], parameters: {cmd: 'true', timeout: 60, retries: 0}}\n`;
  }
  writeFileSync(path.join(work, 'nodes.yaml'), nodes);
  writeFileSync(path.join(work, 'tasks.yaml'), tasks);
}

function runCli(args) {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [mains.cli, ...args], {
      cwd: root,
      env: { ...baseEnv(), ...credsEnv('bench-operator') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    c.stdout.on('data', (d) => (out += d));
    c.stderr.on('data', (d) => (out += d));
    c.once('exit', (code) => resolve({ code, out }));
  });
}

let cleaned = false;
async function cleanup() {
  if (cleaned) return;
  cleaned = true;
  await stopChildren(children, 5000);
  const quiet = (p) => p.catch((err) => log(`cleanup: ${err.message}`));
  await quiet(
    (async () => {
      const nc = await connectNats({ natsUrl: NATS_URL, natsCreds: credsOf('bench-admin') }, 'granule-bench');
      await deleteExecutionStreams(nc, prefix);
      await nc.close();
    })(),
  );
  await quiet(
    (async () => {
      const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length) await redis.del(...keys);
      redis.disconnect();
    })(),
  );
  if (secured) await quiet(secured.stop());
  if (dbCreated) await quiet(admin(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`));
  if (process.env.BENCH_KEEP === '1') log(`kept the process logs in ${work}`);
  else rmSync(work, { recursive: true, force: true });
}

/**
 * Deploys the bench graph as `runId` through the CLI and waits for the run's end in the event
 * log; returns its wall time (first to last event), events, task runs, CPU snapshots around it
 * and the agents' CPU per task run.
 */
async function deployRun(db, runId) {
  const cpuBefore = cpuSnapshot();
  const wallStart = Date.now();
  const deploy = await runCli([
    'deploy',
    '--tasks',
    path.join(work, 'tasks.yaml'),
    '--nodes',
    path.join(work, 'nodes.yaml'),
    '--run-id',
    runId,
  ]);
  if (deploy.code !== 0) throw new Error(`granule deploy failed (${deploy.code}): ${deploy.out}`);
  const last = await waitFor(
    'the run to end',
    async () => {
      const r = await db.query(
        `SELECT type FROM granule_events WHERE stream_id = $1 ORDER BY stream_version DESC LIMIT 1`,
        [`run-${runId}`],
      );
      const type = r.rows[0]?.type;
      return ['DeploymentSucceeded', 'DeploymentFailed', 'DeploymentStopped', 'DeploymentRefused'].includes(type)
        ? type
        : undefined;
    },
    TIMEOUT_S * 1000,
  );
  const cliWall = (Date.now() - wallStart) / 1000;
  const cpuAfter = cpuSnapshot();
  if (last !== 'DeploymentSucceeded') throw new Error(`run ${runId} ended with ${last}`);
  const span = await db.query(
    `SELECT count(*)::int AS events, count(*) FILTER (WHERE type = 'TaskSucceeded')::int AS tasks,
            extract(epoch FROM max(created_at) - min(created_at)) AS seconds
       FROM granule_events WHERE stream_id = $1`,
    [`run-${runId}`],
  );
  const { events, tasks, seconds } = span.rows[0];
  const agentsCpu = cpuBefore && cpuAfter ? (cpuAfter.agents - cpuBefore.agents) / tasks : undefined;
  return { cpuBefore, cpuAfter, cliWall, wall: Number(seconds), events, tasks, agentsCpu };
}

async function main() {
  await admin(`CREATE DATABASE "${dbName}"`);
  dbCreated = true;
  log(`database ${dbName}, subject prefix ${prefix}`);
  if (AUTH) {
    await secure(Array.from({ length: AGENTS }, (_, i) => `b${i + 1}`));
    log(`NATS with authorization on at ${NATS_URL}, Redis with a password; every process with its own credential`);
  } else log(`BENCH_AUTH=0: the machine's NATS ${NATS_URL} and Redis ${REDIS_URL}, no credentials`);
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
      GRANULE_MAX_BUSY_NODES: String(Math.max(200, AGENTS)),
      GRANULE_HEARTBEAT_SECONDS: '2',
      GRANULE_PRESENCE_TTL_SECONDS: '10',
    },
    '"msg":"orchestrator started"',
  );

  // Agents start 10 at a time (each is a Node.js process with Nest); the ones that come up are used.
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  const started = [];
  const t0 = Date.now();
  for (let k = 0; k < AGENTS; k += 10) {
    const batch = [];
    for (let i = k; i < Math.min(AGENTS, k + 10); i++) {
      const uid = `b${i + 1}`;
      const { child } = start(`agent-${uid}`, mains.agent, {
        GRANULE_NODE_UID: uid,
        GRANULE_ROOT: path.join(work, `r-${uid}`),
        GRANULE_HEARTBEAT_SECONDS: '2',
        GRANULE_LOG_LEVEL: i === 0 ? 'info' : 'warn',
        GRANULE_SPAWN_HELPER: SPAWN_HELPER,
      });
      batch.push({ uid, child });
    }
    const batchDeadline = Date.now() + 60_000;
    for (const a of batch) {
      try {
        await waitFor(
          `agent ${a.uid}`,
          async () => {
            if (a.child.exitCode !== null) throw new Error(`agent ${a.uid} exited (${a.child.exitCode})`);
            return (await redis.exists(`${prefix}:presence:${a.uid}`)) === 1;
          },
          Math.max(0, batchDeadline - Date.now()),
        );
        started.push(a.uid);
      } catch (err) {
        log(`${err.message}; going on without it`);
        a.child.kill('SIGKILL');
      }
    }
  }
  redis.disconnect();
  if (started.length === 0) throw new Error('no agent started');
  log(`${started.length} of ${AGENTS} agents up in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  const spawnMs = await bareSpawn(300);
  const bashMs = await bareSpawn(300, '/bin/bash', ['-c', 'true']);
  writeInputs(started);
  const db = new Client({ connectionString: dbUrl });
  await db.connect();
  try {
    // Agents are long-lived daemons: a fleet's deployments find them warm. The first run after
    // they start may pay for compiling their code on its first tasks; it is run (and reported)
    // on its own, and the figures below are those of the next run (BENCH_WARMUP=0: none).
    const warmup = WARMUP ? await deployRun(db, `bench-${id}-warmup`) : undefined;
    const agentsCpuText = (run) =>
      run.agentsCpu === undefined ? '' : `; agents' CPU ${run.agentsCpu.toFixed(2)} ms per task run`;
    if (warmup)
      log(
        `warm-up run (the agents' first): ${warmup.wall.toFixed(2)} s for ${warmup.tasks} task runs${agentsCpuText(warmup)}`,
      );
    const runId = `bench-${id}`;
    // What the idle stack costs (heartbeats, consumers' pull loops): 3 s with nothing to do.
    const idleStart = cpuSnapshot();
    await sleep(3000);
    const idleEnd = cpuSnapshot();
    const { cpuBefore, cpuAfter, cliWall, wall, events, tasks } = await deployRun(db, runId);
    const all = await db.query(`SELECT count(*)::int AS n FROM granule_events`);
    // Commit-side times (created_at) for dispatch and success; the agent's own clock (data.at of
    // TaskStarted / TaskSucceeded) splits the overhead into its legs (same host, same clock).
    const overhead = await db.query(
      `SELECT extract(epoch FROM s.created_at - d.created_at) * 1000 - (s.data->>'durationMs')::float AS overhead_ms,
              (s.data->>'durationMs')::float AS duration_ms,
              extract(epoch FROM (t.data->>'at')::timestamptz - d.created_at) * 1000 AS to_agent_ms,
              extract(epoch FROM (s.data->>'at')::timestamptz - (t.data->>'at')::timestamptz) * 1000 - (s.data->>'durationMs')::float AS in_agent_ms,
              extract(epoch FROM s.created_at - (s.data->>'at')::timestamptz) * 1000 AS back_ms
         FROM granule_events d
         JOIN granule_events s ON s.stream_id = d.stream_id AND s.type = 'TaskSucceeded' AND s.data->>'key' = d.data->>'key'
         JOIN granule_events t ON t.stream_id = d.stream_id AND t.type = 'TaskStarted' AND t.data->>'key' = d.data->>'key'
        WHERE d.stream_id = $1 AND d.type = 'TaskDispatched'`,
      [`run-${runId}`],
    );
    // The whole cycle of each chained task on its node: from the previous task's success (or
    // its own dispatch, for the first) to its own success, both as committed.
    const cycles = await db.query(
      `SELECT extract(epoch FROM created_at - lag(created_at) OVER (PARTITION BY split_part(data->>'key', '@', 2) ORDER BY stream_version)) * 1000 AS cycle_ms
         FROM granule_events WHERE stream_id = $1 AND type = 'TaskSucceeded'`,
      [`run-${runId}`],
    );
    const over = overhead.rows.map((r) => Number(r.overhead_ms)).sort((a, b) => a - b);
    const dur = overhead.rows.map((r) => Number(r.duration_ms)).sort((a, b) => a - b);
    const f = (n) => n.toFixed(2);
    console.log(
      `orchestrator benchmark: ${started.length} agents${started.length < AGENTS ? ` (of ${AGENTS} requested: the others did not start on this machine)` : ''} x ${TASKS} chained no-op shell tasks = ${tasks} task runs   (spawn helper: ${helperKind}; ${AUTH ? 'NATS with authorization, signed commands and dispatches, Redis with a password' : 'BENCH_AUTH=0: no NATS authorization'})`,
    );
    console.log(
      `run wall time (first to last event):  ${wall.toFixed(2)} s   (deploy command to end seen: ${cliWall.toFixed(2)} s)`,
    );
    if (warmup)
      console.log(
        `  (the figures are the agents' second run; their first, right after they started, took ${warmup.wall.toFixed(2)} s${agentsCpuText(warmup)}. BENCH_WARMUP=0 measures the first)`,
      );
    console.log(`task runs per second:                 ${(tasks / wall).toFixed(0)}`);
    console.log(
      `events written per second:            ${(events / wall).toFixed(0)}   (${events} run events; ${all.rows[0].n} rows in granule_events)`,
    );
    console.log(
      `per-task overhead (ms):               median ${f(percentile(over, 50))}   p99 ${f(percentile(over, 99))}   (succeeded - dispatched - agent durationMs)`,
    );
    const leg = (name) => overhead.rows.map((r) => Number(r[name])).sort((a, b) => a - b);
    console.log(
      `  legs, median (ms):                  dispatch committed -> agent started ${f(percentile(leg('to_agent_ms'), 50))}   in the agent around the process ${f(percentile(leg('in_agent_ms'), 50))}   agent done -> TaskSucceeded committed ${f(percentile(leg('back_ms'), 50))}`,
    );
    console.log(
      `agent-reported task duration (ms):    median ${f(percentile(dur, 50))}   p99 ${f(percentile(dur, 99))}   (bash -c true, as the agent runs it)`,
    );
    console.log(
      `bare spawn of /bin/true (ms):         median ${f(percentile(spawnMs, 50))}   p99 ${f(percentile(spawnMs, 99))}   (child_process.spawn to exit, ${spawnMs.length} runs)`,
    );
    const cycle = cycles.rows
      .map((r) => r.cycle_ms)
      .filter((v) => v !== null)
      .map(Number)
      .sort((a, b) => a - b);
    const bashMedian = percentile(bashMs, 50);
    console.log(
      `bare spawn of bash -c true (ms):      median ${f(bashMedian)}   p99 ${f(percentile(bashMs, 99))}   (the command the tasks run)`,
    );
    console.log(
      `task cycle on a node (ms):            median ${f(percentile(cycle, 50))}   p99 ${f(percentile(cycle, 99))}   -> overhead over the bare spawn: median ${f(percentile(cycle, 50) - bashMedian)}   p99 ${f(percentile(cycle, 99) - bashMedian)}   (previous TaskSucceeded committed -> this one committed)`,
    );
    // The first agent logs each task at info level with handledMs: from the dispatch's delivery
    // to the outcome's report, with the task's process in it (sub-millisecond, unlike the
    // event times above).
    const handled = readFileSync(path.join(work, 'agent-b1.log'), 'utf8')
      .split('\n')
      .flatMap((line) => {
        try {
          const entry = JSON.parse(line);
          return entry.msg === 'task succeeded' && typeof entry.handledMs === 'number' && entry.runId === runId
            ? [entry.handledMs]
            : [];
        } catch {
          return [];
        }
      })
      .sort((a, b) => a - b);
    if (handled.length > 0) {
      console.log(
        `in the agent (ms):                    median ${f(percentile(handled, 50))}   p99 ${f(percentile(handled, 99))}   -> over the bare spawn: median ${f(percentile(handled, 50) - bashMedian)}   p99 ${f(percentile(handled, 99) - bashMedian)}   (dispatch delivered -> outcome reported, the process included; agent b1, ${handled.length} tasks; overheads are over the bare spawn's median)`,
      );
    }
    if (cpuBefore && cpuAfter) {
      const roles = Object.keys(cpuAfter).filter((k) => k !== 'system');
      const spent = (keys) => keys.reduce((a, k) => a + cpuAfter[k] - cpuBefore[k], 0) / tasks;
      const per = (k) => spent([k]).toFixed(2);
      console.log(
        `CPU per task run (ms):                orchestrator ${per('orchestrator')}   agents ${per('agents')} (${((cpuAfter.system.agents - cpuBefore.system.agents) / tasks).toFixed(2)} of it in the kernel)   spawn helpers ${per('helpers')}   task processes ${per('tasks')}   postgres ${per('postgres')}   nats ${per('nats')}   planner ${per('planner')}   all ${spent(roles).toFixed(2)}   (10 ms ticks; the machine has ${availableParallelism()} cores)`,
      );
      // The control plane's share (orchestrator, graph-planner, PostgreSQL, NATS): what the run
      // costs where the agents run on hosts of their own, as they do in a fleet.
      const control = spent(['orchestrator', 'planner', 'postgres', 'nats']);
      const capacity = (availableParallelism() * 1000) / control;
      console.log(
        `control plane (ms CPU per task run):  ${control.toFixed(2)}   -> with agents on their own hosts, these ${availableParallelism()} cores sustain about ${capacity.toFixed(0)} task runs/s (${tasks} in ${(tasks / capacity).toFixed(1)} s)`,
      );
    }
    if (idleStart && idleEnd) {
      const idle = (k) => ((idleEnd[k] - idleStart[k]) / 3).toFixed(0);
      console.log(
        `CPU while idle (ms per second):       orchestrator ${idle('orchestrator')}   agents ${idle('agents')}   spawn helpers ${idle('helpers')}   postgres ${idle('postgres')}   nats ${idle('nats')}   (measured for 3 s before the deploy)`,
      );
    }
    if (HOLLOW) await controlPlaneRun(db, started);
    console.log(
      `targets: overhead under 2 ms median; ${2000} task runs with every transition persisted in a few seconds`,
    );
  } finally {
    await db.end();
  }
}

/**
 * The same deployment once more with the agents replaced by hollow nodes (test/bench/
 * hollow-nodes.mjs, ADR 0012): one process answers every dispatch at once, so the run measures
 * the control plane alone, on cores it no longer shares with 100 agents and 2,000 task processes.
 */
async function controlPlaneRun(db, uids) {
  const agents = [...children].filter((c) => c.granuleRole === 'agent');
  const exits = agents.map(
    (c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', r))),
  );
  for (const c of agents) c.kill('SIGTERM');
  await Promise.all(exits);
  await startService(
    'hollow-nodes',
    mains.hollow,
    { HOLLOW_UIDS: uids.join(','), GRANULE_HEARTBEAT_SECONDS: '2' },
    'hollow nodes ready',
  );
  const { cpuBefore, cpuAfter, cliWall, wall, events, tasks } = await deployRun(db, `bench-${id}-hollow`);
  console.log('');
  console.log(
    `control plane alone: the same ${tasks} task runs, the agents replaced by ${uids.length} hollow nodes (one process answering every dispatch at once; ADR 0012)`,
  );
  console.log(
    `run wall time (first to last event):  ${wall.toFixed(2)} s   (deploy command to end seen: ${cliWall.toFixed(2)} s)   ${(tasks / wall).toFixed(0)} task runs/s   ${(events / wall).toFixed(0)} events written/s`,
  );
  if (cpuBefore && cpuAfter) {
    const per = (k) => ((cpuAfter[k] - cpuBefore[k]) / tasks).toFixed(2);
    console.log(
      `CPU per task run (ms):                orchestrator ${per('orchestrator')}   postgres ${per('postgres')}   nats ${per('nats')}   planner ${per('planner')}   hollow nodes ${per('hollow')}`,
    );
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
  process.stderr.write(`orchestrator benchmark failed: ${err.message}\n`);
  await cleanup();
  process.exitCode = 1;
}
