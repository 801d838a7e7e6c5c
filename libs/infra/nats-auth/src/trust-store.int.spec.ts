import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { MAX_REPLY_MESSAGES, executionSubjects } from '@granule/contracts';
import {
  ensureExecutionStreams,
  ensureInputsBucket,
  startPrivateNats,
  StoredInputs,
  StoredInputsError,
  type PrivateServer,
} from '@granule/messaging';
import { ArtifactCache, ArtifactStore, ensureArtifactsBucket, packDirectory } from '@granule/artifacts';
import { readCredentials } from './credentials';
import { NATS_AUTH_TIMEOUT_SECONDS, TrustStore } from './trust-store';

// Each protection below is the NATS server's, fed by the trust store: a test must fail when the
// store stops issuing the limit it checks (for instance an agent given the operator's subjects).

const PREFIX = 'authz';
const s = executionSubjects(PREFIX);
let dir: string;
let store: TrustStore;
let server: PrivateServer;
const open: NatsConnection[] = [];

async function as(creds: string, inboxPrefix?: string): Promise<NatsConnection> {
  const nc = await connect({
    servers: server.url,
    authenticator: credsAuthenticator(new TextEncoder().encode(creds)),
    reconnect: false,
    ...(inboxPrefix ? { inboxPrefix } : {}),
  });
  open.push(nc);
  return nc;
}

async function issue(name: string, role: Parameters<TrustStore['issue']>[0]['role'], node?: string) {
  const { creds, identity } = await store.issue({ name, role, node });
  const file = path.join(dir, `${name}.creds`);
  writeFileSync(file, creds, { mode: 0o600 });
  const { inboxPrefix } = readCredentials(file);
  return { creds, identity, inboxPrefix, connect: () => as(creds, inboxPrefix) };
}

/** The error the server sends for a refused subscription, or undefined when it delivered or stayed silent. */
async function subscriptionRefusal(nc: NatsConnection, subject: string): Promise<string | undefined> {
  return new Promise<string | undefined>((resolve) => {
    nc.subscribe(subject, {
      callback: (err) => {
        if (err) resolve(err.message);
      },
    });
    setTimeout(() => resolve(undefined), 500);
  });
}

/** Whether a message `from` publishes on `subject` reaches an admin listening there. */
async function delivered(from: NatsConnection, subject: string): Promise<boolean> {
  const listener = await admin.connect();
  const seen = new Promise<boolean>((resolve) => {
    listener.subscribe(subject, { callback: () => resolve(true) });
    setTimeout(() => resolve(false), 500);
  });
  await listener.flush();
  from.publish(subject, 'forged');
  await from.flush().catch(() => undefined);
  return seen;
}

/** 'refused' when NATS refused the JetStream API call for this identity, 'done' when it was carried out. */
async function refusal(call: Promise<unknown>): Promise<'refused' | 'done' | string> {
  try {
    await call;
    return 'done';
  } catch (err) {
    return err instanceof Error && /[Pp]ermission/.test(err.message) ? 'refused' : (err as Error).message;
  }
}

let admin: Awaited<ReturnType<typeof issue>>;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'granule-trust-'));
  store = await TrustStore.create(path.join(dir, 'keys'), { prefix: PREFIX });
  server = await startPrivateNats({ include: store.serverIncludePath });
  admin = await issue('test-admin', 'admin');
}, 30_000);

afterAll(async () => {
  await Promise.all(open.map((nc) => nc.close().catch(() => undefined)));
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

// Each test connects to a real nats-server a few times: seconds on a busy machine, not jest's 5.
jest.setTimeout(30_000);

describe('NATS authentication with the trust store', () => {
  it('refuses a client without credentials', async () => {
    await expect(connect({ servers: server.url, reconnect: false })).rejects.toThrow(/Authorization Violation/);
  });

  it("gives a client the trust store's time to authenticate (not nats-server's 2 s), then drops a silent one", async () => {
    const { hostname, port } = new URL(server.url);
    const socket = createConnection({ host: hostname, port: Number(port) });
    const opened = Date.now();
    let received = '';
    const closed = new Promise<number>((resolve) => {
      socket.setEncoding('utf8').on('data', (d: string) => (received += d));
      socket.once('close', () => resolve(Date.now() - opened));
    });
    const after = await closed;
    expect(received).toMatch(/^INFO .*\r\n-ERR 'Authentication Timeout'/s);
    expect(after).toBeGreaterThanOrEqual((NATS_AUTH_TIMEOUT_SECONDS - 0.5) * 1000);
    expect(after).toBeLessThan((NATS_AUTH_TIMEOUT_SECONDS + 3) * 1000);
  });

  it('refuses credentials issued by another trust store', async () => {
    const other = await TrustStore.create(path.join(dir, 'other'), { prefix: PREFIX });
    const { creds } = await other.issue({ name: 'intruder', role: 'admin' });
    await expect(as(creds)).rejects.toThrow(/Authorization Violation/);
  });

  it('refuses a credential once it has expired', async () => {
    const { creds } = await store.issue({ name: 'short-lived', role: 'viewer', ttlSeconds: 1 });
    await new Promise((r) => setTimeout(r, 2100));
    await expect(as(creds)).rejects.toThrow(/Authorization Violation|expired/i);
  });

  it('refuses a revoked agent after the reload, and accepts the one enrolled after it', async () => {
    const before = await issue('node-r1', 'agent', 'r1');
    await (await before.connect()).close();
    await store.revoke('r1');
    await server.reload();
    await expect(before.connect()).rejects.toThrow(/Authorization Violation/);
    expect(store.statusOf('r1').map((x) => x.status)).toEqual(['revoked']);
    await new Promise((r) => setTimeout(r, 1100)); // a revocation covers every JWT of its second
    const again = await issue('node-r1', 'agent', 'r1');
    await expect(again.connect()).resolves.toBeDefined();
  }, 15_000);
});

describe('NATS authorization by role', () => {
  it("an agent cannot read another node's dispatches, nor its inbox, nor pull its consumer", async () => {
    const agent = await issue('node-a1', 'agent', 'a1');
    const nc = await agent.connect();
    expect(await subscriptionRefusal(nc, s.dispatch.forNode('a2'))).toMatch(/Permissions Violation/);
    expect(await subscriptionRefusal(await agent.connect(), '_INBOX_node-a2.>')).toMatch(/Permissions Violation/);
    expect(
      await delivered(
        await agent.connect(),
        `$JS.API.CONSUMER.MSG.NEXT.${s.dispatch.stream}.${s.dispatch.consumerFor('a2')}`,
      ),
    ).toBe(false);
  });

  it("an agent publishes its own node's results, output and task logs, never another node's", async () => {
    const agent = await issue('node-b1', 'agent', 'b1');
    expect(await delivered(await agent.connect(), s.results.forTask('run1', 'b1'))).toBe(true);
    expect(await delivered(await agent.connect(), s.output.forTask('run1', 'b1'))).toBe(true);
    expect(await delivered(await agent.connect(), s.logs.forTask('run1', 'b1'))).toBe(true);
    expect(await delivered(await agent.connect(), s.results.forTask('run1', 'b2'))).toBe(false);
    expect(await delivered(await agent.connect(), s.output.forTask('run1', 'b2'))).toBe(false);
    expect(await delivered(await agent.connect(), s.logs.forTask('run1', 'b2'))).toBe(false);
  });

  it('only the orchestrator publishes dispatches', async () => {
    const orchestrator = await issue('orchestrator', 'orchestrator');
    const operator = await issue('alice', 'operator');
    const agent = await issue('node-c1', 'agent', 'c1');
    expect(await delivered(await orchestrator.connect(), s.dispatch.forNode('c1'))).toBe(true);
    expect(await delivered(await operator.connect(), s.dispatch.forNode('c1'))).toBe(false);
    expect(await delivered(await agent.connect(), s.dispatch.forNode('c1'))).toBe(false);
  });

  it('an operator sends commands; a viewer and an agent cannot', async () => {
    const operator = await issue('bob', 'operator');
    const viewer = await issue('carol', 'viewer');
    const agent = await issue('node-d1', 'agent', 'd1');
    expect(await delivered(await operator.connect(), s.commands.startDeployment)).toBe(true);
    expect(await delivered(await viewer.connect(), s.commands.startDeployment)).toBe(false);
    expect(await delivered(await agent.connect(), s.commands.startDeployment)).toBe(false);
  });

  it('a viewer lists runs and reads config, but cannot change config', async () => {
    const viewer = await issue('dave', 'viewer');
    expect(await delivered(await viewer.connect(), s.runs.list)).toBe(true);
    expect(await delivered(await viewer.connect(), `${PREFIX}.config.node.list`)).toBe(true);
    expect(await delivered(await viewer.connect(), `${PREFIX}.config.node.add`)).toBe(false);
    expect(await delivered(await viewer.connect(), `${PREFIX}.config.strategy.remove`)).toBe(false);
  });

  it('an operator stores inputs too large for a command and graph-planner reads them; a viewer stores none, and an operator cannot delete or purge them', async () => {
    const orchestrator = await issue('orch-inputs', 'orchestrator');
    const operator = await issue('frank', 'operator');
    const planner = await issue('planner-inputs', 'graph-planner');
    const viewer = await issue('grace', 'viewer');
    await ensureInputsBucket(await orchestrator.connect(), PREFIX);
    // About 3 MiB: many chunks, so the planner's reading consumer gets flow control requests to answer.
    const inputs = { nodes: Array.from({ length: 40_000 }, (_, i) => ({ uid: `n${i}`, roles: ['worker'] })) };
    const ref = await new StoredInputs(await operator.connect(), PREFIX).put(inputs);
    expect(await new StoredInputs(await planner.connect(), PREFIX).get(ref)).toEqual(inputs);

    const refused = await new StoredInputs(await viewer.connect(), PREFIX).put({ nodes: [] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StoredInputsError);
    expect((refused as StoredInputsError).message).toMatch(
      /^the inputs \(12 bytes\) could not be stored in object store AUTHZ_INPUTS: NATS refused publish on \$JS\.API\.\S+ for this identity$/,
    );

    const jsm = await jetstreamManager(await operator.connect());
    const bucketStream = `OBJ_${s.inputs.bucket}`;
    await expect(jsm.streams.purge(bucketStream)).rejects.toThrow(/[Pp]ermission/);
    await expect(jsm.streams.delete(bucketStream)).rejects.toThrow(/[Pp]ermission/);
    expect(await new StoredInputs(await planner.connect(), PREFIX).get(ref)).toEqual(inputs);
  }, 30_000);

  it("a service's answer in several chunks reaches the requester whole (as many as MAX_REPLY_MESSAGES)", async () => {
    const viewer = await issue('frank', 'viewer');
    const responder = await (await issue('chunky-config-store', 'config-store')).connect();
    responder.subscribe(`${PREFIX}.config.node.list`, {
      callback: (_e, m) => {
        for (let k = 0; k < MAX_REPLY_MESSAGES; k++) m.respond(String(k));
      },
    });
    await responder.flush();
    const received: string[] = [];
    const replies = await (
      await viewer.connect()
    ).requestMany(`${PREFIX}.config.node.list`, '', {
      strategy: 'count',
      maxMessages: MAX_REPLY_MESSAGES,
      maxWait: 3000,
    });
    for await (const m of replies) received.push(m.string());
    expect(received).toEqual(Array.from({ length: MAX_REPLY_MESSAGES }, (_, k) => String(k)));
  }, 30_000);
  it('config-store and an operator store deployment files, an agent fetches them but cannot write or delete any', async () => {
    const configStore = await issue('config-store-artifacts', 'config-store');
    const operator = await issue('ivan', 'operator');
    const agent = await issue('node-e1', 'agent', 'e1');
    await ensureArtifactsBucket(await configStore.connect(), PREFIX);
    const scripts = path.join(dir, 'scripts');
    mkdirSync(scripts);
    // Several chunks, so the agent's consumer is asked for more than one batch.
    writeFileSync(path.join(scripts, 'big.bin'), Buffer.alloc(3 * 1024 * 1024, 7));
    const packed = await packDirectory(scripts, path.join(dir, 'scripts.tar'));
    expect(await new ArtifactStore(await operator.connect(), PREFIX).putFile(packed.file, packed)).toEqual({
      stored: true,
    });
    await new ArtifactStore(await configStore.connect(), PREFIX).read(packed.digest, async () => undefined);

    const agentNc = await agent.connect();
    const cache = new ArtifactCache(path.join(dir, 'agent-cache'), new ArtifactStore(agentNc, PREFIX));
    const at = await cache.ensure({ name: 'p', version: '1', digest: packed.digest });
    expect(statSync(path.join(at, 'big.bin')).size).toBe(3 * 1024 * 1024);

    const bucket = s.artifacts.bucket;
    await expect(
      new ArtifactStore(agentNc, PREFIX).putFile(packed.file, { ...packed, digest: 'a'.repeat(64) }),
    ).rejects.toThrow(
      /could not be stored in object store AUTHZ_ARTIFACTS: NATS refused publish on \S+ for this identity/,
    );
    expect(await new ArtifactStore(await configStore.connect(), PREFIX).info('a'.repeat(64))).toBeUndefined();
    expect(await delivered(await agent.connect(), `$O.${bucket}.M.${packed.digest}`)).toBe(false);
    const jsm = await jetstreamManager(await agent.connect());
    await expect(jsm.streams.purge(`OBJ_${bucket}`)).rejects.toThrow(/[Pp]ermission/);
    await expect(jsm.streams.deleteMessage(`OBJ_${bucket}`, 1)).rejects.toThrow(/[Pp]ermission/);
    await expect(jsm.streams.delete(`OBJ_${bucket}`)).rejects.toThrow(/[Pp]ermission/);
    const operatorJsm = await jetstreamManager(await operator.connect());
    await expect(operatorJsm.streams.purge(`OBJ_${bucket}`)).rejects.toThrow(/[Pp]ermission/);
    // Still there, whole.
    expect(await new ArtifactStore(await configStore.connect(), PREFIX).info(packed.digest)).toEqual({
      digest: packed.digest,
      size: packed.size,
    });
  }, 60_000);

  it('config-store reads runs for its HTTP API (ADR 0032): the run queries, run events and task logs; no command, no graph, no results', async () => {
    const configStore = await issue('config-store-runs', 'config-store');
    for (const subject of [s.runs.list, s.runs.show, s.runs.events, s.runs.tasks, s.runs.logs])
      expect([subject, await delivered(await configStore.connect(), subject)]).toEqual([subject, true]);
    for (const subject of [s.runs.graph, s.commands.stopDeployment, s.results.forTask('r1', 'n1')])
      expect([subject, await delivered(await configStore.connect(), subject)]).toEqual([subject, false]);
    const reader = await configStore.connect();
    expect(await subscriptionRefusal(reader, s.events.forRun('r1'))).toBeUndefined();
    expect(await subscriptionRefusal(reader, s.logs.forRun('r1'))).toBeUndefined();
    expect(await subscriptionRefusal(await configStore.connect(), s.results.forRun('r1'))).toMatch(
      /[Pp]ermissions [Vv]iolation/,
    );
    expect(await subscriptionRefusal(await configStore.connect(), s.commands.all)).toMatch(
      /[Pp]ermissions [Vv]iolation/,
    );
  }, 60_000);

  it('an operator and a viewer follow the committed events with an ordered consumer; an agent cannot, and no operator purges them', async () => {
    const orchestrator = await issue('orch-events', 'orchestrator');
    const orchNc = await orchestrator.connect();
    await ensureExecutionStreams(orchNc, PREFIX);
    orchNc.publish(s.events.forRun('spine-1'), JSON.stringify({ streamVersion: 1 }));
    await orchNc.flush();
    const follow = async (nc: NatsConnection): Promise<string | undefined> => {
      const consumer = await jetstream(nc).consumers.get(s.events.stream, {
        filter_subjects: s.events.forRun('spine-1'),
      });
      return (await consumer.next({ expires: 5000 }))?.string();
    };
    expect(await follow(await (await issue('olga', 'operator')).connect())).toBe('{"streamVersion":1}');
    expect(await follow(await (await issue('vera', 'viewer')).connect())).toBe('{"streamVersion":1}');
    await expect(follow(await (await issue('node-f1', 'agent', 'f1')).connect())).rejects.toThrow(/[Pp]ermission/);
    const operatorJsm = await jetstreamManager(await (await issue('oscar', 'operator')).connect());
    await expect(operatorJsm.streams.purge(s.events.stream)).rejects.toThrow(/[Pp]ermission/);
    await expect(operatorJsm.streams.deleteMessage(s.events.stream, 1)).rejects.toThrow(/[Pp]ermission/);
  }, 30_000);

  it('an operator and a viewer follow stored task output with an ordered consumer; an agent cannot, and no operator purges it', async () => {
    const orchestrator = await issue('orch-stored-logs', 'orchestrator');
    const orchNc = await orchestrator.connect();
    await ensureExecutionStreams(orchNc, PREFIX);
    await jetstream(orchNc).publish(s.storedLogs.forRun('spine-2'), JSON.stringify({ runId: 'spine-2', records: [] }));
    const follow = async (nc: NatsConnection): Promise<string | undefined> => {
      const consumer = await jetstream(nc).consumers.get(s.storedLogs.stream, {
        filter_subjects: s.storedLogs.forRun('spine-2'),
      });
      return (await consumer.next({ expires: 5000 }))?.string();
    };
    const expected = '{"runId":"spine-2","records":[]}';
    expect(await follow(await (await issue('olaf', 'operator')).connect())).toBe(expected);
    expect(await follow(await (await issue('vince', 'viewer')).connect())).toBe(expected);
    await expect(follow(await (await issue('node-f2', 'agent', 'f2')).connect())).rejects.toThrow(/[Pp]ermission/);
    const operatorJsm = await jetstreamManager(await (await issue('oona', 'operator')).connect());
    await expect(operatorJsm.streams.purge(s.storedLogs.stream)).rejects.toThrow(/[Pp]ermission/);
    await expect(operatorJsm.streams.deleteMessage(s.storedLogs.stream, 1)).rejects.toThrow(/[Pp]ermission/);
  }, 30_000);

  it('graph-planner and config-store cannot read back, delete or purge the dispatches or the events, nor any stream but their bucket', async () => {
    const orchestrator = await issue('orch-narrow', 'orchestrator');
    const orchNc = await orchestrator.connect();
    await ensureExecutionStreams(orchNc, PREFIX);
    await ensureInputsBucket(orchNc, PREFIX);
    const js = jetstream(orchNc);
    const dispatched = await js.publish(s.dispatch.forNode('z1'), JSON.stringify({ secret: 'hunter2' }));
    const event = await js.publish(s.events.forRun('narrow-1'), JSON.stringify({ streamVersion: 1 }));
    for (const role of ['graph-planner', 'config-store'] as const) {
      const jsm = await jetstreamManager(await (await issue(`${role}-narrow`, role)).connect());
      for (const [stream, seq] of [
        [s.dispatch.stream, dispatched.seq],
        [s.events.stream, event.seq],
      ] as const) {
        const what = `${role} on ${stream}`;
        await expect([what, await refusal(jsm.streams.getMessage(stream, { seq }))]).toEqual([what, 'refused']);
        await expect([what, await refusal(jsm.streams.deleteMessage(stream, seq))]).toEqual([what, 'refused']);
        await expect([what, await refusal(jsm.streams.purge(stream))]).toEqual([what, 'refused']);
        await expect([what, await refusal(jsm.streams.delete(stream))]).toEqual([what, 'refused']);
        await expect([what, await refusal(jsm.streams.info(stream))]).toEqual([what, 'refused']);
      }
      const other = role === 'graph-planner' ? `OBJ_${s.artifacts.bucket}` : `OBJ_${s.inputs.bucket}`;
      await expect([role, await refusal(jsm.streams.purge(other))]).toEqual([role, 'refused']);
      await expect([role, await refusal(jsm.streams.add({ name: `${role}_OWN`, subjects: [`${role}.own`] }))]).toEqual([
        role,
        'refused',
      ]);
    }
    // Both are still there, whole.
    const orchJsm = await jetstreamManager(orchNc);
    expect((await orchJsm.streams.getMessage(s.dispatch.stream, { seq: dispatched.seq }))?.json()).toEqual({
      secret: 'hunter2',
    });
    expect((await orchJsm.streams.getMessage(s.events.stream, { seq: event.seq }))?.json()).toEqual({
      streamVersion: 1,
    });
  }, 60_000);

  it('an agent, an operator and a viewer cannot create, change or delete a stream', async () => {
    const orchestrator = await issue('orch-streams', 'orchestrator');
    await ensureExecutionStreams(await orchestrator.connect(), PREFIX);
    const orchJsm = await jetstreamManager(await orchestrator.connect());
    const dispatch = (await orchJsm.streams.info(s.dispatch.stream)).config;
    for (const [name, role, node] of [
      ['node-g1', 'agent', 'g1'],
      ['otto', 'operator', undefined],
      ['vicky', 'viewer', undefined],
    ] as const) {
      const jsm = await jetstreamManager(await (await issue(name, role, node)).connect());
      await expect([role, await refusal(jsm.streams.add({ name: 'G1_OWN', subjects: ['g1-own.>'] }))]).toEqual([
        role,
        'refused',
      ]);
      await expect([role, await refusal(jsm.streams.update(s.dispatch.stream, { ...dispatch, max_msgs: 1 }))]).toEqual([
        role,
        'refused',
      ]);
      await expect([role, await refusal(jsm.streams.delete(s.dispatch.stream))]).toEqual([role, 'refused']);
    }
    expect((await orchJsm.streams.info(s.dispatch.stream)).config.max_msgs).toBe(dispatch.max_msgs);
    await expect(orchJsm.streams.info('G1_OWN')).rejects.toThrow(/stream not found/);
  }, 60_000);

  it('a viewer gets its replies on its own inbox', async () => {
    const viewer = await issue('erin', 'viewer');
    const responder = await admin.connect();
    responder.subscribe(s.runs.list, {
      callback: (_e, m) => {
        m.respond('[]');
      },
    });
    await responder.flush();
    const reply = await (await viewer.connect()).request(s.runs.list, '', { timeout: 2000 });
    expect(reply.string()).toBe('[]');
  });
});
