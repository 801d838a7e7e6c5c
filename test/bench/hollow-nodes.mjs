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
//   env: GRANULE_NATS_URL, GRANULE_SUBJECT_PREFIX, HOLLOW_UIDS (b1,b2,...), GRANULE_HEARTBEAT_SECONDS (2),
//        GRANULE_NATS_CREDS_DIR (optional: `agent-<uid>.creds` of each node, for a NATS with authorization)
//   prints "hollow nodes ready: N" on stdout once every node is registered, present and pulling.
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
const uids = env('HOLLOW_UIDS').split(',').filter(Boolean);
let heartbeatSeconds = Number(env('GRANULE_HEARTBEAT_SECONDS', '2'));
const credsDir = process.env.GRANULE_NATS_CREDS_DIR;
const subjects = executionSubjects(prefix);

// One NATS connection per node, as in a fleet: the server's work per message depends on it (a
// message to each of 100 connections is 100 writes; to one connection, a few).
const connections = new Map();
for (const uid of uids) {
  // Each node with its own credential where NATS requires one, as a real agent (signed registration).
  const nc = await connectNats(
    {
      natsUrl: env('GRANULE_NATS_URL'),
      ...(credsDir ? { natsCreds: path.join(credsDir, `agent-${uid}.creds`) } : {}),
    },
    `granule-hollow-${uid}`,
  );
  connections.set(uid, { nc, js: jetstream(nc) });
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
        { timeoutMs: 3000 },
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

beat();
await Promise.all(uids.map((uid) => register(uid)));
const loops = (await Promise.all(uids.map((uid) => serve(uid)))).map((s) => s.loop);
let timer = setInterval(() => beat(), heartbeatSeconds * 1000);
process.stdout.write(`hollow nodes ready: ${uids.length}\n`);

const stop = async () => {
  clearInterval(timer);
  timer = undefined;
  beat(true);
  await Promise.allSettled([...connections.values()].map((c) => c.nc.drain()));
  await Promise.allSettled(loops);
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
