// Hollow nodes for the orchestrator benchmark: one process that plays many node agents on the
// wire and does nothing else, so that the benchmark can measure the control plane alone
// (orchestrator, graph-planner, PostgreSQL, NATS JetStream, Redis) with no task process and no
// agent code competing with it for the machine's cores (ADR 0012; the idea is Kubernetes'
// kubemark hollow nodes and Nomad's nodesim).
//
// For each uid in HOLLOW_UIDS it does what a node agent does on the wire, on a NATS connection of
// its own: registers on
// `<p>.agent.register` (which makes its dispatch consumer), beats on `<p>.agent.heartbeat.<uid>`
// (the orchestrator keeps the presence key), pulls its own dispatch consumer one
// message at a time, and answers every dispatch with a `succeeded` outcome (exit code 0, no
// output, `startedAt` set, the agent's message id) once JetStream has stored it, then acks the
// dispatch. A dispatch the agent would refuse is refused the same way (checkDispatch). Nothing is
// run, journaled or logged per task.
//
// Not a test double: no test uses it, and the benchmark prints its figures apart from the
// end-to-end ones, which always come from real agents running real processes.
//
// A fleet of thousands (npm run bench:fleet-10k) does not fit one connection per node in one
// process: HOLLOW_NODES_PER_CONNECTION (default 1) lets that many nodes share a connection. Each
// node still registers itself, beats on its own subject, pulls only its own dispatch consumer
// (`dispatch.<uid>`, made by the orchestrator at registration) and reports on its own result
// subject, as a real agent does; only the socket is shared (so no per-node credential then).
//
//   env: GRANULE_NATS_URL, GRANULE_SUBJECT_PREFIX, HOLLOW_UIDS (b1,b2,...) or HOLLOW_UIDS_FILE (one
//        uid a line), GRANULE_HEARTBEAT_SECONDS (2), HOLLOW_NODES_PER_CONNECTION (1),
//        HOLLOW_REGISTER_CONCURRENCY (20),
//        GRANULE_NATS_CREDS_DIR (optional: `agent-<uid>.creds` of each node, for a NATS with authorization)
//   prints "hollow nodes ready: N" on stdout once every node is registered, present and pulling,
//   and "hollow nodes answered: N" every 10 s while the count grows.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(import.meta.url);
const { jetstream } = require('@nats-io/jetstream');
const { executionSubjects } = require(path.join(root, 'dist/libs/contracts/src/index.js'));
const { connectNats, decodeJson, publishJson, request } = require(
  path.join(root, 'dist/libs/infra/messaging/src/index.js'),
);
const { checkDispatch, finishedMessage, invalidDispatchOutcome, progressMsgIds } = require(
  path.join(root, 'dist/apps/node-agent/src/dispatch-decision.js'),
);
const { AGENT_VERSION } = require(path.join(root, 'dist/apps/node-agent/src/agent-version.js'));

const env = (name, fallback) => {
  const value = process.env[name] ?? fallback;
  if (value === undefined || value === '') {
    process.stderr.write(`hollow-nodes: ${name} is not set\n`);
    process.exit(2);
  }
  return value;
};
const prefix = env('GRANULE_SUBJECT_PREFIX');
const uids = (
  process.env.HOLLOW_UIDS_FILE
    ? readFileSync(process.env.HOLLOW_UIDS_FILE, 'utf8').split('\n')
    : env('HOLLOW_UIDS').split(',')
).filter(Boolean);
const perConnection = Number(env('HOLLOW_NODES_PER_CONNECTION', '1'));
const registerConcurrency = Number(env('HOLLOW_REGISTER_CONCURRENCY', '20'));
if (!(perConnection >= 1) || (perConnection > 1 && process.env.GRANULE_NATS_CREDS_DIR)) {
  process.stderr.write('hollow-nodes: HOLLOW_NODES_PER_CONNECTION > 1 needs a NATS without per-node credentials\n');
  process.exit(2);
}
let answered = 0;
let heartbeatSeconds = Number(env('GRANULE_HEARTBEAT_SECONDS', '2'));
const credsDir = process.env.GRANULE_NATS_CREDS_DIR;
const subjects = executionSubjects(prefix);

// One NATS connection per node, as in a fleet: the server's work per message depends on it (a
// message to each of 100 connections is 100 writes; to one connection, a few).
// With HOLLOW_NODES_PER_CONNECTION, that many nodes share one.
const connections = new Map();
for (let k = 0; k < uids.length; k += perConnection) {
  const uid = uids[k];
  // Each node with its own credential where NATS requires one, as a real agent (signed registration).
  const nc = await connectNats(
    {
      natsUrl: env('GRANULE_NATS_URL'),
      ...(credsDir ? { natsCreds: path.join(credsDir, `agent-${uid}.creds`) } : {}),
    },
    perConnection === 1 ? `granule-hollow-${uid}` : `granule-hollow-${uid}+${perConnection - 1}`,
  );
  const shared = { nc, js: jetstream(nc) };
  for (const u of uids.slice(k, k + perConnection)) connections.set(u, shared);
}
const ncs = [...new Set([...connections.values()].map((c) => c.nc))];

/** Runs `work` for every item, at most `limit` at a time. */
async function eachLimited(items, limit, work) {
  const out = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

function beat(leaving = false) {
  const at = new Date().toISOString();
  for (const uid of uids)
    connections
      .get(uid)
      .nc.publish(subjects.agents.heartbeatFrom(uid), JSON.stringify({ uid, at, ...(leaving ? { leaving } : {}) }));
}

async function register(uid) {
  const { nc } = connections.get(uid);
  for (let attempt = 1; ; attempt++) {
    try {
      ({ heartbeatSeconds } = await request(
        nc,
        { name: 'orchestrator', code: 'ORCHESTRATOR', hint: 'start the orchestrator first' },
        subjects.agents.register,
        { uid, hostname: `hollow-${uid}`, address: '127.0.0.1', agentVersion: AGENT_VERSION },
        { timeoutMs: 10_000 },
      ));
      return;
    } catch (err) {
      if (attempt >= 10) throw new Error(`node ${uid} was not registered: ${err.message}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

async function answer(uid, msg) {
  const { js } = connections.get(uid);
  const check = checkDispatch(decodeJson(msg), uid);
  if (!check.ok) {
    process.stderr.write(`hollow-nodes: node ${uid}: invalid dispatch: ${check.problems.join('; ')}\n`);
    if (check.replyTo)
      await publishJson(
        js,
        subjects.results.forTask(check.replyTo.runId, uid),
        finishedMessage(check.replyTo, invalidDispatchOutcome(check.problems), new Date()),
        progressMsgIds.done(check.replyTo.dispatchId),
      );
    msg.ack();
    return;
  }
  const d = check.dispatch;
  const now = new Date();
  const outcome = { status: 'succeeded', exitCode: 0, durationMs: 0, outputTail: '', attempts: 1 };
  await publishJson(
    js,
    subjects.results.forTask(d.runId, uid),
    finishedMessage({ ...d, startedAt: now.toISOString() }, outcome, now),
    progressMsgIds.done(d.dispatchId),
  );
  msg.ack();
  answered++;
}

async function serve(uid) {
  // Made by the orchestrator at registration: agents create nothing on JetStream.
  const { js } = connections.get(uid);
  const consumer = await js.consumers.get(subjects.dispatch.stream, subjects.dispatch.consumerFor(uid));
  const messages = await consumer.consume({ max_messages: 1 });
  // Wrapped: an async function returning the loop's promise would wait for the loop to end.
  const loop = (async () => {
    for await (const msg of messages) {
      // Unanswered, the dispatch is delivered again after its ack wait, as to a real agent.
      await answer(uid, msg).catch((err) => process.stderr.write(`hollow-nodes: node ${uid}: ${err.message}\n`));
    }
  })();
  return { loop };
}

// Beating from the start, as an agent does: registering thousands takes longer than a presence TTL.
beat();
let timer = setInterval(() => beat(), heartbeatSeconds * 1000);
const asked = heartbeatSeconds;
await eachLimited(uids, registerConcurrency, (uid) => register(uid));
if (heartbeatSeconds !== asked) {
  clearInterval(timer);
  timer = setInterval(() => beat(), heartbeatSeconds * 1000);
}
const loops = (await eachLimited(uids, registerConcurrency, (uid) => serve(uid))).map((s) => s.loop);
process.stdout.write(`hollow nodes ready: ${uids.length}\n`);
let reported = 0;
setInterval(() => {
  if (answered === reported) return;
  reported = answered;
  process.stdout.write(`hollow nodes answered: ${answered}\n`);
}, 10_000).unref();

const stop = async () => {
  clearInterval(timer);
  timer = undefined;
  beat(true);
  await Promise.allSettled(ncs.map((nc) => nc.drain()));
  await Promise.allSettled(loops);
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
