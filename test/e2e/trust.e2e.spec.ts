import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { createUser } from '@nats-io/nkeys';
import { connect, credsAuthenticator, headers as natsHeaders } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import Redis from 'ioredis';
import { connectNats, onPermissionViolation, request, SERVICES } from '@granule/messaging';
import { CONFIG_OPERATIONS, CONFIG_READ_OPERATIONS, type ConfigOperation } from '@granule/contracts';
import { signMessage, TrustStore } from '@granule/nats-auth';
import { E2eStack, FIXTURES, sleep, waitUntil } from './stack';

// Break-in attempts on a running stack whose NATS requires credentials and whose Redis requires
// a password (issue 20). Each attempt is made the way an intruder would make it, on the real
// servers, and each assertion fails when the protection it checks is taken away.
const CHAIN = ['--tasks', path.join(FIXTURES, 'chain/tasks.yaml'), '--nodes', path.join(FIXTURES, 'chain/nodes.yaml')];
const API_TOKEN = randomBytes(24).toString('hex');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** A `.creds` file's text from a user JWT and a seed. */
function credsText(jwt: string, seed: string): string {
  return (
    `-----BEGIN NATS USER JWT-----\n${jwt}\n------END NATS USER JWT------\n\n` +
    `-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`
  );
}

const jwtOf = (creds: string): string => (/-----BEGIN NATS USER JWT-----\n(\S+)\n/.exec(creds) as RegExpExecArray)[1];

// Connections, CLI runs and waits for expiry: seconds each on a busy machine, not jest's 5.
jest.setTimeout(60_000);

describe('trust: break-in attempts on an authenticated stack (whole stack)', () => {
  let stack: E2eStack;
  let httpPort: number;
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'granule-trust-'));
  const opened: NatsConnection[] = [];

  /** Connects with the credential `file` the way every Granule process does. */
  const connectAs = async (file: string): Promise<NatsConnection> => {
    const nc = await connectNats({ natsUrl: stack.natsUrl, natsCreds: file }, 'granule-e2e-intruder', {
      timeoutMs: 3000,
    });
    opened.push(nc);
    return nc;
  };
  const rawConnect = (options: Parameters<typeof connect>[0] = {}) =>
    connect({ servers: stack.natsUrl, reconnect: false, timeout: 3000, ...options });
  const nodeEvents = async (uid: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> =>
    stack.dataSource.query('SELECT type, data FROM granule_events WHERE stream_id = $1 ORDER BY stream_version', [
      `node-${uid}`,
    ]);

  beforeAll(async () => {
    httpPort = await freePort();
    stack = await E2eStack.start({
      name: 'trust',
      agents: ['1', '2', '3', '4'],
      configStoreEnv: { GRANULE_HTTP_PORT: String(httpPort), GRANULE_API_TOKEN: API_TOKEN },
    });
    await stack.service('config-store').start();
  }, 120_000);

  afterAll(async () => {
    for (const nc of opened) await nc.close().catch(() => undefined);
    rmSync(scratch, { recursive: true, force: true });
    await stack?.stop();
  }, 60_000);

  describe('connecting', () => {
    it('NATS refuses a client with no credential, a stolen JWT without its key, and a credential of another installation', async () => {
      await expect(rawConnect()).rejects.toThrow(/Authorization Violation/);

      const viewer = readFileSync(stack.credsFile('e2e-viewer'), 'utf8');
      const stolen = credsText(jwtOf(viewer), new TextDecoder().decode(createUser().getSeed()));
      await expect(rawConnect({ authenticator: credsAuthenticator(new TextEncoder().encode(stolen)) })).rejects.toThrow(
        /Authorization Violation/,
      );

      const elsewhere = await TrustStore.create(path.join(scratch, 'other-auth'), { prefix: stack.prefix });
      const { creds: foreign } = await elsewhere.issue({ name: 'intruder', role: 'admin' });
      await expect(
        rawConnect({ authenticator: credsAuthenticator(new TextEncoder().encode(foreign)) }),
      ).rejects.toThrow(/Authorization Violation/);
      // The genuine credential gets in: the refusals above are about the credential, not the server.
      await (await rawConnect({ authenticator: credsAuthenticator(new TextEncoder().encode(viewer)) })).close();
    });

    it('NATS refuses an expired credential, and a revoked one from the next reload on', async () => {
      const trust = stack.trust as TrustStore;
      const brief = await trust.issue({ name: 'brief', role: 'viewer', ttlSeconds: 1 });
      await sleep(2100);
      await expect(
        rawConnect({ authenticator: credsAuthenticator(new TextEncoder().encode(brief.creds)) }),
      ).rejects.toThrow(/Authorization Violation|expired/i);

      const gone = await trust.issue({ name: 'gone', role: 'operator' });
      const auth = { authenticator: credsAuthenticator(new TextEncoder().encode(gone.creds)) };
      await (await rawConnect(auth)).close();
      await trust.revoke('gone');
      await stack.natsServer?.reload();
      await expect(rawConnect(auth)).rejects.toThrow(/Authorization Violation/);
    });

    it('the CLI with a refused credential stops with one line naming what was refused, no secret in it', async () => {
      const viewer = readFileSync(stack.credsFile('e2e-viewer'), 'utf8');
      const seed = new TextDecoder().decode(createUser().getSeed());
      const file = path.join(scratch, 'stolen.creds');
      writeFileSync(file, credsText(jwtOf(viewer), seed), { mode: 0o600 });
      const r = await stack.granule(['runs', 'list'], { env: { GRANULE_NATS_CREDS: file } });
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/^error: .*refused.*stolen\.creds/i);
      expect(r.stderr).not.toContain(seed);
      expect(r.stderr).not.toContain(jwtOf(viewer));
    });
  });

  describe('agents', () => {
    it("an agent's credential reads only its own node's dispatches and publishes only its own node's outcomes", async () => {
      const s = stack.subjects;
      const agent1 = await connectAs(stack.credsFile('agent-1'));
      const js = jetstream(agent1);
      // Its own consumer: allowed (so the refusals below are about the node, not the connection).
      await expect(js.consumers.get(s.dispatch.stream, s.dispatch.consumerFor('1'))).resolves.toBeDefined();
      await expect(js.consumers.get(s.dispatch.stream, s.dispatch.consumerFor('2'))).rejects.toThrow(
        /permissions violation/i,
      );
      const sniff = agent1.subscribe(s.dispatch.all);
      await expect(sniff.closed).resolves.toBeInstanceOf(Error);
      // Nor can it keep another node looking alive: its heartbeats go out on its own subject only.
      const refusals: string[] = [];
      const stopWatching = onPermissionViolation(agent1, (err) => refusals.push(err.subject));
      agent1.publish(s.agents.heartbeatFrom('2'), JSON.stringify({ uid: '2', at: new Date().toISOString() }));
      await waitUntil(async () => refusals.includes(s.agents.heartbeatFrom('2')), 'the heartbeat refused');
      stopWatching();

      // A run whose step2 on node 2 is still running when node 1's agent claims it succeeded.
      stack.setSlow('step2@2', 5);
      const deploy = await stack.granule(['deploy', ...CHAIN, '--run-id', 'forged-outcome']);
      stack.assertExitedOk(deploy, 'deploy');
      const seen = await stack.waitForEvent('forged-outcome', 'TaskDispatched', (e) => e.data.key === 'step2@2');
      const dispatched = seen.find((e) => e.type === 'TaskDispatched' && e.data.key === 'step2@2')?.data as {
        attempt: number;
        dispatchId: string;
      };
      const forged = {
        runId: 'forged-outcome',
        key: 'step2@2',
        node: '2',
        attempt: dispatched.attempt,
        dispatchId: dispatched.dispatchId,
        status: 'succeeded',
        at: new Date().toISOString(),
        exitCode: 0,
        durationMs: 1,
        outputTail: 'forged',
      };
      const forgedAt = Date.now();
      // On node 2's subject: NATS refuses the publish.
      await expect(js.publish(s.results.forTask('forged-outcome', '2'), JSON.stringify(forged))).rejects.toThrow(
        /permissions violation/i,
      );
      // On its own subject, naming node 2: stored, but the orchestrator takes node 2's outcomes only from node 2's subject.
      await js.publish(s.results.forTask('forged-outcome', '1'), JSON.stringify(forged));

      const events = await stack.waitForEnd('forged-outcome', 60_000);
      expect(events[events.length - 1].type).toBe('DeploymentSucceeded');
      const outcomes = events.filter((e) => e.type === 'TaskSucceeded' && e.data.key === 'step2@2');
      expect(outcomes).toHaveLength(1);
      expect(outcomes[0].data.outputTail).not.toBe('forged');
      // Recorded when the real task ended (it sleeps 5 s), not when the forgery came.
      expect(outcomes[0].at.getTime() - forgedAt).toBeGreaterThan(3000);
      expect(stack.ledger('forged-outcome')).toContain('step2@2');
    }, 90_000);

    it("an agent's credential registers its own node only: as another node, or a new one, it is refused and nothing is recorded", async () => {
      const s = stack.subjects;
      const agent1 = await connectAs(stack.credsFile('agent-1'));
      const registration = (uid: string) => ({ uid, hostname: 'intruder', address: '10.6.6.6', agentVersion: '0.0.0' });
      const registered = async (uid: string) => (await nodeEvents(uid)).filter((e) => e.type === 'NodeRegistered');
      const before = await registered('2');
      expect(before.length).toBeGreaterThan(0);
      for (const uid of ['2', '9']) {
        const refusal = await request(agent1, SERVICES.orchestrator, s.agents.register, registration(uid)).then(
          () => 'registered',
          (err: Error & { code?: string }) => `${err.code}: ${err.message}`,
        );
        expect(refusal).toBe(`AGENT_REFUSED: 'agent-1' is enrolled for node 1, not ${uid}`);
      }
      // Its own node it may register (so the refusals above are about the node).
      await expect(request(agent1, SERVICES.orchestrator, s.agents.register, registration('1'))).resolves.toMatchObject(
        {
          heartbeatSeconds: expect.any(Number),
        },
      );
      expect(await registered('2')).toEqual(before);
      expect(await nodeEvents('9')).toEqual([]);
      const jsm = await jetstreamManager(await connectAs(stack.credsFile('e2e-admin')));
      await expect(jsm.consumers.info(s.dispatch.stream, s.dispatch.consumerFor('9'))).rejects.toThrow(/not found/);
    });

    it('a dispatch the orchestrator did not sign is not run, and the refusal is recorded on the node', async () => {
      const s = stack.subjects;
      const admin = await connectAs(stack.credsFile('e2e-admin'));
      const js = jetstream(admin);
      const forgery = (id: string) => ({
        runId: 'forged-dispatch',
        key: `${id}@1`,
        task: id,
        node: '1',
        type: 'shell',
        parameters: { cmd: `echo "forged-dispatch ${id}@1" >> "$GRANULE_E2E_LEDGER"` },
        attempt: 1,
        dispatchId: `forged-dispatch/${id}@1/1`,
        noop: false,
      });
      const subject = s.dispatch.forNode('1');
      // Unsigned, then signed by an identity that is not the orchestrator (NATS let the admin publish it).
      await js.publish(subject, JSON.stringify(forgery('unsigned')));
      const signedData = new TextEncoder().encode(JSON.stringify(forgery('by-admin')));
      const h = natsHeaders();
      for (const [k, v] of Object.entries(
        signMessage(readFileSync(stack.credsFile('e2e-admin'), 'utf8'), subject, signedData),
      ))
        h.set(k, v);
      await js.publish(subject, signedData, { headers: h });

      const refused = await waitUntil(async () => {
        const rows = (await nodeEvents('1')).filter((e) => e.type === 'DispatchRefused');
        return rows.length >= 2 ? rows : undefined;
      }, 'two DispatchRefused events on node-1');
      expect(refused.map((e) => e.data.dispatchId)).toEqual([
        'forged-dispatch/unsigned@1/1',
        'forged-dispatch/by-admin@1/1',
      ]);
      expect(String(refused[0].data.reason)).toMatch(/not signed by a known identity/);
      expect(String(refused[1].data.reason)).toMatch(/'e2e-admin' has the role admin; it needs orchestrator/);
      await sleep(1000);
      expect(stack.ledger('forged-dispatch')).toEqual([]);
      // The agent goes on serving the orchestrator.
      const after = await stack.granule(['deploy', ...CHAIN, '--run-id', 'after-forgery']);
      stack.assertExitedOk(after, 'deploy after the forged dispatches');
      const events = await stack.waitForEnd('after-forgery', 60_000);
      expect(events[events.length - 1].type).toBe('DeploymentSucceeded');
    }, 90_000);
  });

  describe('operators', () => {
    it('a viewer lists runs but cannot deploy: NATS refuses the command and nothing is recorded', async () => {
      const list = await stack.granule(['runs', 'list', '-o', 'json'], { as: 'e2e-viewer' });
      stack.assertExitedOk(list, 'runs list as a viewer');
      expect(Array.isArray(JSON.parse(list.stdout))).toBe(true);

      const r = await stack.granule(['deploy', ...CHAIN, '--run-id', 'by-viewer'], { as: 'e2e-viewer' });
      expect(r.code).toBe(1);
      expect(r.stderr.trim()).toBe(
        `error: NATS refused to let 'e2e-viewer' (role viewer) publish to ${stack.prefix}.cmd.deployment.start: its credential does not allow it; use an identity whose role may`,
      );
      await sleep(1000);
      expect(await stack.events('by-viewer')).toEqual([]);
    });

    it('a command signed by a viewer is refused even when a party allowed to publish relays it; the run goes on', async () => {
      const s = stack.subjects;
      stack.setSlow('step3@3', 4);
      const deploy = await stack.granule(['deploy', ...CHAIN, '--run-id', 'relayed-stop']);
      stack.assertExitedOk(deploy, 'deploy');
      await stack.waitForEvent('relayed-stop', 'TaskStarted', (e) => e.data.key === 'step3@3');

      const admin = await connectAs(stack.credsFile('e2e-admin'));
      const commandId = randomBytes(8).toString('hex');
      const data = new TextEncoder().encode(
        JSON.stringify({ type: 'StopDeployment', payload: { commandId, runId: 'relayed-stop' } }),
      );
      const h = natsHeaders();
      for (const [k, v] of Object.entries(
        signMessage(readFileSync(stack.credsFile('e2e-viewer'), 'utf8'), s.commands.stopDeployment, data),
      ))
        h.set(k, v);
      const reply = admin.subscribe(s.commands.replyFor(commandId), { max: 1, timeout: 15_000 });
      await jetstream(admin).publish(s.commands.stopDeployment, data, { headers: h, msgID: commandId });
      let answer: unknown;
      for await (const m of reply) answer = m.json();
      expect(answer).toEqual({
        ok: false,
        error: {
          code: 'FORBIDDEN',
          message: "StopDeployment refused: 'e2e-viewer' has the role viewer; it needs operator or admin",
        },
      });
      const events = await stack.waitForEnd('relayed-stop', 60_000);
      expect(events.map((e) => e.type)).not.toContain('DeploymentStopRequested');
      expect(events[events.length - 1].type).toBe('DeploymentSucceeded');
    }, 90_000);

    it('the run records who asked for it, stopped it and resumed it from the signed commands, and runs show and runs events say so', async () => {
      stack.setSlow('step2@2', 4);
      const deploy = await stack.granule(['deploy', ...CHAIN, '--run-id', 'who-asked']);
      stack.assertExitedOk(deploy, 'deploy');
      await stack.waitForEvent('who-asked', 'TaskStarted', (e) => e.data.key === 'step2@2');
      stack.assertExitedOk(await stack.granule(['stop', 'who-asked']), 'stop');
      stack.setSlow('step2@2', 0);
      const stopped = await stack.waitForEnd('who-asked', 60_000);
      expect(stopped[stopped.length - 1].type).toBe('DeploymentStopped');
      const show = await stack.granule(['runs', 'show', 'who-asked'], { as: 'e2e-viewer' });
      stack.assertExitedOk(show, 'runs show');
      expect(show.stdout).toContain('requested by e2e-operator');
      expect(show.stdout).toContain('stopped by the operator (e2e-operator)');

      stack.assertExitedOk(await stack.granule(['resume', 'who-asked']), 'resume');
      const events = await stack.waitForEvent('who-asked', 'DeploymentSucceeded');
      expect(events[0]).toMatchObject({ type: 'DeploymentRequested', data: { requestedBy: 'e2e-operator' } });
      expect(events.filter((e) => e.type === 'DeploymentStopRequested' || e.type === 'DeploymentResumed')).toEqual([
        expect.objectContaining({
          type: 'DeploymentStopRequested',
          data: expect.objectContaining({ requestedBy: 'e2e-operator' }),
        }),
        expect.objectContaining({
          type: 'DeploymentResumed',
          data: expect.objectContaining({ requestedBy: 'e2e-operator' }),
        }),
      ]);
      const listed = await stack.granule(['runs', 'events', 'who-asked'], { as: 'e2e-viewer' });
      stack.assertExitedOk(listed, 'runs events');
      const lines = listed.stdout.split('\n');
      expect(lines.find((l) => l.includes('DeploymentStopRequested'))).toMatch(
        /DeploymentStopRequested +stopped by the operator \(e2e-operator\)$/,
      );
      expect(lines.find((l) => l.includes('DeploymentResumed'))).toMatch(/DeploymentResumed +by e2e-operator$/);
    }, 90_000);
  });

  describe('config-store', () => {
    const http = (method: string, route: string, body?: unknown, token?: string) =>
      fetch(`http://127.0.0.1:${httpPort}${route}`, {
        method,
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });

    it('the NATS API refuses what the HTTP API refuses, and both record who changed what', async () => {
      // No credential: HTTP answers 401, NATS does not even let the client in.
      expect((await http('POST', '/nodes', { uid: 'n-anon', hostname: 'h', address: '10.0.0.1' })).status).toBe(401);
      expect(
        (await http('POST', '/nodes', { uid: 'n-anon', hostname: 'h', address: '10.0.0.1' }, 'wrong-token-0123456789'))
          .status,
      ).toBe(401);
      await expect(rawConnect()).rejects.toThrow(/Authorization Violation/);

      // A viewer may read but not change: NATS refuses the publish...
      const viewerAdd = await stack.granule(['node', 'add', 'n-viewer', '--hostname', 'h', '--address', '10.0.0.2'], {
        as: 'e2e-viewer',
      });
      expect(viewerAdd.code).toBe(1);
      expect(viewerAdd.stderr.trim()).toBe(
        `error: NATS refused to let 'e2e-viewer' (role viewer) publish to ${stack.prefix}.config.node.add: its credential does not allow it; use an identity whose role may`,
      );
      const viewerList = await stack.granule(['node', 'list', '-o', 'json'], { as: 'e2e-viewer' });
      stack.assertExitedOk(viewerList, 'node list as a viewer');
      // ...and the config-store refuses the viewer's signed request relayed by someone allowed to publish it.
      const admin = await connectAs(stack.credsFile('e2e-admin'));
      const subject = `${stack.prefix}.config.node.add`;
      const data = new TextEncoder().encode(JSON.stringify({ uid: 'n-relayed', hostname: 'h', address: '10.0.0.3' }));
      const h = natsHeaders();
      for (const [k, v] of Object.entries(
        signMessage(readFileSync(stack.credsFile('e2e-viewer'), 'utf8'), subject, data),
      ))
        h.set(k, v);
      const relayed = (await admin.request(subject, data, { headers: h, timeout: 10_000 })).json();
      expect(relayed).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
      // The planner's identity reads the config but cannot change it.
      const planner = await connectAs(stack.credsFile('graph-planner'));
      await expect(planner.request(subject, data, { timeout: 5000 })).rejects.toThrow(/permissions violation/i);

      // With the token over HTTP, and as an operator on NATS, the same call works.
      expect(
        (await http('POST', '/nodes', { uid: 'n-http', hostname: 'h', address: '10.0.0.4' }, API_TOKEN)).status,
      ).toBe(201);
      const add = await stack.granule(['node', 'add', 'n-nats', '--hostname', 'h', '--address', '10.0.0.5']);
      stack.assertExitedOk(add, 'node add as an operator');
      const nodes = JSON.parse(
        (await stack.granule(['node', 'list', '-o', 'json'], { as: 'e2e-viewer' })).stdout,
      ) as Array<{ uid: string }>;
      expect(nodes.map((n) => n.uid).sort()).toEqual(['n-http', 'n-nats']);

      const audit = await stack.granule(['audit', 'list', '-o', 'json'], { as: 'e2e-viewer' });
      stack.assertExitedOk(audit, 'audit list');
      const entries = JSON.parse(audit.stdout) as Array<{ operation: string; caller: string; outcome: string }>;
      // Newest first; the refused attempts changed nothing.
      expect(entries.filter((e) => e.operation === 'node.add' && e.outcome === 'ok').map((e) => e.caller)).toEqual([
        'e2e-operator',
        'api-token',
      ]);
    }, 60_000);
  });

  describe('config-store, every write operation', () => {
    // Each write of the config-store's NATS API with its HTTP route (credential.record has none:
    // it is an admin's, and the HTTP token is an operator's). Payloads are valid, so a refusal is
    // about the caller, not the request.
    const WRITES: Array<{ op: ConfigOperation; payload: Record<string, unknown>; http?: [string, string] }> = [
      { op: 'release.install', payload: { name: 'r-x', version: '1.0.0' }, http: ['POST', '/releases'] },
      { op: 'release.remove', payload: { id: 'r-x' }, http: ['DELETE', '/releases/r-x'] },
      { op: 'plugin.install', payload: { name: 'p-x', version: '1.0.0' }, http: ['POST', '/plugins'] },
      { op: 'plugin.remove', payload: { id: 'p-x' }, http: ['DELETE', '/plugins/p-x'] },
      { op: 'env.create', payload: { name: 'e-x' }, http: ['POST', '/clusters'] },
      { op: 'env.update', payload: { id: 'e-x', settings: { a: '1' } }, http: ['PATCH', '/clusters/e-x'] },
      {
        op: 'env.plugin.enable',
        payload: { environment: 'e-x', plugin: 'p-x' },
        http: ['POST', '/clusters/e-x/plugins'],
      },
      {
        op: 'env.plugin.disable',
        payload: { environment: 'e-x', plugin: 'p-x' },
        http: ['DELETE', '/clusters/e-x/plugins/p-x'],
      },
      { op: 'node.add', payload: { uid: 'n-x', hostname: 'h', address: '10.0.0.9' }, http: ['POST', '/nodes'] },
      { op: 'node.update', payload: { uid: 'n-x', hostname: 'h2' }, http: ['PATCH', '/nodes/n-x'] },
      { op: 'node.assign', payload: { uid: 'n-x', environment: 'e-x' }, http: ['PUT', '/nodes/n-x/assignment'] },
      { op: 'node.remove', payload: { uid: 'n-x' }, http: ['DELETE', '/nodes/n-x'] },
      {
        op: 'tasks.put',
        payload: { scope: 'release', id: 'r-x', tasks: [] },
        http: ['PUT', '/releases/r-x/deployment_tasks'],
      },
      { op: 'strategy.upload', payload: { name: 's-x', yaml: 'name: s-x' }, http: ['POST', '/strategies'] },
      { op: 'strategy.remove', payload: { name: 's-x' }, http: ['DELETE', '/strategies/s-x'] },
      { op: 'credential.record', payload: { uid: 'n-x', state: 'revoked' } },
    ];

    // One viewer and one admin connection for the whole table (many more make the server slow to
    // reload for the revocation test below).
    let both: Promise<{ viewer: NatsConnection; admin: NatsConnection }> | undefined;
    const connections = () =>
      (both ??= (async () => ({
        viewer: await connectAs(stack.credsFile('e2e-viewer')),
        admin: await connectAs(stack.credsFile('e2e-admin')),
      }))());

    it('the table names every write operation of the NATS API', () => {
      expect(WRITES.map((w) => w.op).sort()).toEqual(
        CONFIG_OPERATIONS.filter((op) => !CONFIG_READ_OPERATIONS.includes(op)).sort(),
      );
    });

    it.each(WRITES)(
      '$op: HTTP refuses it without the token; NATS refuses it to a viewer, and config-store refuses the viewer relayed',
      async ({ op, payload, http: route }) => {
        const subject = `${stack.prefix}.config.${op}`;
        if (route) {
          const [method, url] = route;
          const answer = await fetch(`http://127.0.0.1:${httpPort}${url}`, {
            method,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(payload),
          });
          expect([op, answer.status]).toEqual([op, 401]);
        }
        const data = new TextEncoder().encode(JSON.stringify(payload));
        const { viewer, admin } = await connections();
        const direct = await viewer.request(subject, data, { timeout: 5000 }).then(
          (m) => `answered ${m.string()}`,
          (err: Error) => err.message,
        );
        expect([op, direct]).toEqual([op, expect.stringMatching(/permissions violation/i)]);
        const h = natsHeaders();
        for (const [k, v] of Object.entries(
          signMessage(readFileSync(stack.credsFile('e2e-viewer'), 'utf8'), subject, data),
        ))
          h.set(k, v);
        const relayed = (await admin.request(subject, data, { headers: h, timeout: 10_000 })).json();
        expect([op, relayed]).toEqual([
          op,
          expect.objectContaining({ ok: false, error: expect.objectContaining({ code: 'FORBIDDEN' }) }),
        ]);
      },
    );
  });

  describe('redis', () => {
    it('refuses a client without the password or with a wrong one', async () => {
      const url = new URL(stack.redisUrl);
      expect(url.password).not.toBe('');
      const attempt = async (password?: string): Promise<string> => {
        const client = new Redis({
          host: url.hostname,
          port: Number(url.port),
          ...(password === undefined ? {} : { password }),
          lazyConnect: true,
          maxRetriesPerRequest: 0,
          retryStrategy: () => null,
        });
        const errors: string[] = [];
        client.on('error', (err: Error) => errors.push(err.message));
        try {
          await client.connect();
          await client.set(`${stack.prefix}:presence:ghost`, '1');
          return 'written';
        } catch (err) {
          return [...errors, (err as Error).message].join('; ');
        } finally {
          client.disconnect();
        }
      };
      expect(await attempt()).toMatch(/NOAUTH/);
      expect(await attempt('not-the-password')).toMatch(/WRONGPASS/);
      expect(await attempt(decodeURIComponent(url.password))).toBe('written');
      await stack.redisClient().del(`${stack.prefix}:presence:ghost`);
    });
  });

  describe('revocation of a running agent', () => {
    it('granule agent revoke cuts the agent off at the reload, and its node shows the credential revoked', async () => {
      const add = await stack.granule(['node', 'add', '4', '--hostname', 'host-4']);
      stack.assertExitedOk(add, 'node add 4');
      const authDir = path.join(stack.dir, 'auth');
      const pid = String(stack.natsServer?.pid);
      let r: Awaited<ReturnType<E2eStack['granule']>> | undefined;
      await stack.natsServer?.reloaded(async () => {
        r = await stack.granule(['agent', 'revoke', '4', '--auth-dir', authDir, '--nats-pid', pid], {
          as: 'e2e-admin',
        });
      });
      stack.assertExitedOk(r as NonNullable<typeof r>, 'agent revoke');
      expect(r?.stdout).toContain('recorded in the config-store: granule node list shows the credential of node 4');
      const agent4 = await connect({
        servers: stack.natsUrl,
        reconnect: false,
        authenticator: credsAuthenticator(readFileSync(stack.credsFile('agent-4'))),
      }).then(
        () => 'connected',
        (err: Error) => err.message,
      );
      expect(agent4).toMatch(/Authorization Violation/);
      // The running agent was cut off at the reload; NATS refused it at the reconnection, so it
      // stopped with one line saying why (its supervisor would restart it into the same refusal).
      const refused = `node-agent: NATS refused the credential of 'agent-4' in ${stack.credsFile('agent-4')} (Authorization Violation): it was revoked, or issued for another installation — ask for a new one`;
      await waitUntil(async () => stack.agent('4').text.includes(refused), 'the refusal in the agent log', 20_000);
      await waitUntil(async () => !stack.agent('4').running, 'the revoked agent to stop', 5000);
      // Its heartbeats stopped: the orchestrator lets its presence lapse and records it offline.
      await waitUntil(
        async () => (await nodeEvents('4')).some((e) => e.type === 'NodeWentOffline'),
        'node 4 recorded offline',
        20_000,
      );
      expect(await stack.redisClient().exists(`${stack.prefix}:presence:4`)).toBe(0);
      const nodes = JSON.parse(
        (await stack.granule(['node', 'list', '-o', 'json'], { as: 'e2e-viewer' })).stdout,
      ) as Array<{
        uid: string;
        credential: { state: string } | null;
      }>;
      expect(nodes.find((n) => n.uid === '4')?.credential).toMatchObject({ state: 'revoked' });
    }, 60_000);
  });
});
