import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { dispatchIdOf, executionSubjects, redisKeys, type TaskDispatchMessage, type TaskOutputMessage, type TaskProgressMessage } from '@granule/contracts';
import { connectNats, connectRedis, decodeJson, deleteExecutionStreams, ensureExecutionStreams, publishJson, type RedisConnection } from '@granule/messaging';
import type { TaskType } from '@granule/task-model';
import { jetstream, jetstreamManager, type ConsumerMessages, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { AGENT_RESTARTED_ERROR, AGENT_STOPPED_ERROR } from './dispatch-decision';
import { AgentProcess, buildIfStale, runAgentOnce, waitFor } from './testing/agent-process.fixture';

jest.setTimeout(60_000);

const NATS_URL = 'nats://127.0.0.1:4222';
const REDIS_URL = 'redis://127.0.0.1:6379';

describe('node-agent processes', () => {
  // Own subject prefix (streams, subjects, Redis keys) so other suites never interfere.
  const prefix = `t${randomBytes(4).toString('hex')}`;
  const s = executionSubjects(prefix);
  const runId = `run-${randomBytes(3).toString('hex')}`;
  let base: string;
  let nc: NatsConnection;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  let redis: RedisConnection;
  let resultsFeed: ConsumerMessages;
  const results: TaskProgressMessage[] = [];
  const output: TaskOutputMessage[] = [];
  const agents: Record<'a' | 'b', AgentProcess> = {} as Record<'a' | 'b', AgentProcess>;
  const rootOf = (node: 'a' | 'b'): string => path.join(base, `root-${node}`);
  const uidOf = (node: 'a' | 'b'): string => `node-${node}`;

  let seq = 0;
  async function dispatch(node: 'a' | 'b', type: TaskType, parameters: Record<string, unknown>, msgID?: string): Promise<TaskDispatchMessage> {
    const task = `task-${++seq}`;
    const key = `${task}@${uidOf(node)}`;
    const message: TaskDispatchMessage = { runId, key, task, node: uidOf(node), type, parameters, attempt: 1, dispatchId: dispatchIdOf(runId, key, 1), noop: false };
    await publishJson(js, s.dispatch.forNode(uidOf(node)), message, msgID ?? message.dispatchId);
    return message;
  }
  const resultsOf = (d: TaskDispatchMessage): TaskProgressMessage[] => results.filter((r) => r.dispatchId === d.dispatchId);
  async function finished(d: TaskDispatchMessage, count = 1, timeoutMs = 15_000): Promise<TaskProgressMessage[]> {
    await waitFor(() => resultsOf(d).filter((r) => r.status !== 'started').length >= count, `${count} final result(s) of ${d.key}`, timeoutMs);
    return resultsOf(d);
  }

  beforeAll(async () => {
    buildIfStale();
    base = await mkdtemp(path.join(tmpdir(), 'granule-agent-it-'));
    nc = await connectNats(NATS_URL, 'node-agent-int-test');
    js = jetstream(nc);
    jsm = await jetstreamManager(nc);
    redis = await connectRedis(REDIS_URL);
    await ensureExecutionStreams(jsm, prefix);
    const feed = await js.consumers.get(s.results.stream); // ordered consumer over every result
    resultsFeed = await feed.consume();
    void (async () => {
      for await (const m of resultsFeed) results.push(decodeJson<TaskProgressMessage>(m));
    })();
    nc.subscribe(s.output.all, { callback: (_err, m) => void output.push(decodeJson<TaskOutputMessage>(m)) });
    for (const node of ['a', 'b'] as const) {
      agents[node] = new AgentProcess({
        GRANULE_NODE_UID: uidOf(node),
        GRANULE_ROOT: rootOf(node),
        GRANULE_NATS_URL: NATS_URL,
        GRANULE_REDIS_URL: REDIS_URL,
        GRANULE_SUBJECT_PREFIX: prefix,
        GRANULE_HEARTBEAT_SECONDS: '1',
        GRANULE_PRESENCE_TTL_SECONDS: '3',
        GRANULE_REBOOT_COMMAND: 'true',
      });
    }
    await Promise.all([agents.a.start(), agents.b.start()]);
  });

  afterAll(async () => {
    await Promise.all(Object.values(agents).map((a) => (a.running ? a.stop('SIGKILL') : undefined)));
    await resultsFeed?.close();
    if (jsm) await deleteExecutionStreams(jsm, prefix);
    if (redis) {
      await redis.del(redisKeys(prefix).presence(uidOf('a')), redisKeys(prefix).presence(uidOf('b')));
      redis.disconnect();
    }
    await nc?.close();
    if (base) await rm(base, { recursive: true, force: true });
  });

  it('refuses to start on bad configuration with one line naming every problem, exit 1', async () => {
    const { code, stdout, stderr } = await runAgentOnce({ GRANULE_ROOT: 'relative', GRANULE_PRESENCE_TTL_SECONDS: 'soon' });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      'node-agent: invalid configuration: GRANULE_NODE_UID is required: the uid of this node as the plan names it; ' +
        'GRANULE_ROOT must be an absolute path (got "relative"); GRANULE_PRESENCE_TTL_SECONDS must be a whole number of seconds (got "soon")\n',
    );
  });

  it('refuses to start when NATS is unreachable, naming the address and the fix', async () => {
    const { code, stderr } = await runAgentOnce({ GRANULE_NODE_UID: 'x', GRANULE_ROOT: path.join(base, 'root-x'), GRANULE_NATS_URL: 'nats://127.0.0.1:1' });
    expect(code).toBe(1);
    expect(stderr).toMatch(/^node-agent: cannot reach NATS at nats:\/\/127\.0\.0\.1:1: .+ — start it \(tools\/setup\.sh\) or set GRANULE_NATS_URL\n$/);
  });

  it('(a) a shell task runs on the addressed agent only; started then succeeded with the output tail', async () => {
    const d = await dispatch('a', 'shell', { cmd: 'echo "made by $GRANULE_NODE_UID" > effect.txt; echo done-a' });
    const got = await finished(d);
    expect(got.map((r) => r.status)).toEqual(['started', 'succeeded']);
    expect(got[1]).toMatchObject({ runId, key: d.key, node: 'node-a', attempt: 1, exitCode: 0, outputTail: 'done-a\n' });
    expect(got[1].fromJournal).toBeUndefined();
    expect(await readFile(path.join(rootOf('a'), 'effect.txt'), 'utf8')).toBe('made by node-a\n');
    expect(existsSync(path.join(rootOf('b'), 'effect.txt'))).toBe(false);
    await waitFor(() => output.some((o) => o.key === d.key), 'live output');
    expect(output.filter((o) => o.key === d.key)).toEqual([{ runId, key: d.key, node: 'node-a', stream: 'stdout', seq: 0, data: 'done-a\n' }]);
  });

  it('(b) a redelivered dispatch is answered from the journal and the command ran once', async () => {
    const d = await dispatch('a', 'shell', { cmd: 'echo run >> count.log; echo counted' });
    await finished(d);
    // The same msgID again is dropped by the DISPATCH stream (de-duplication window).
    expect((await publishJson(js, s.dispatch.forNode('node-a'), d, d.dispatchId)).duplicate).toBe(true);
    // A new msgID gets through: what a redelivery looks like to the agent.
    expect((await publishJson(js, s.dispatch.forNode('node-a'), d, `${d.dispatchId}#again`)).duplicate).toBe(false);
    const got = await finished(d, 2);
    expect(got.map((r) => [r.status, r.fromJournal ?? false])).toEqual([
      ['started', false],
      ['succeeded', false],
      ['succeeded', true],
    ]);
    expect(got[2]).toMatchObject({ exitCode: 0, outputTail: 'counted\n' });
    expect(await readFile(path.join(rootOf('a'), 'count.log'), 'utf8')).toBe('run\n');
  });

  it('(c) upload_file outside the allowed roots fails with the clear error and writes nothing', async () => {
    const outside = path.join(base, 'outside', 'x.conf');
    const d = await dispatch('b', 'upload_file', { path: outside, data: 'x=1\n' });
    const got = await finished(d);
    expect(got.map((r) => r.status)).toEqual(['started', 'failed']);
    expect(got[1].error).toBe(`upload_file path '${outside}' is outside the allowed roots (${rootOf('b')})`);
    expect(existsSync(outside)).toBe(false);
  });

  it('(f) a puppet task applies a manifest that writes under the root', async () => {
    const target = path.join(rootOf('a'), 'puppet-made.txt');
    await writeFile(path.join(rootOf('a'), 'site.pp'), `file { '${target}': ensure => file, content => "made by puppet\\n" }\n`);
    const d = await dispatch('a', 'puppet', { puppet_manifest: 'site.pp' });
    const got = await finished(d, 1, 45_000);
    expect(got.map((r) => r.status)).toEqual(['started', 'succeeded']);
    expect(got[1].exitCode).toBe(2); // puppet's detailed exit code: changes applied
    expect(await readFile(target, 'utf8')).toBe('made by puppet\n');
  });

  it('(d, e) SIGKILL mid-task: presence expires within the TTL; after a restart the task is failed, not run again', async () => {
    const presence = redisKeys(prefix).presence('node-b');
    expect(JSON.parse((await redis.get(presence)) as string)).toMatchObject({ uid: 'node-b' });
    const pidFile = path.join(rootOf('b'), 'sleep.pid');
    const d = await dispatch('b', 'shell', { cmd: `echo $$ > '${pidFile}'; echo ran >> sleep.log; sleep 30` });
    await waitFor(() => resultsOf(d).length === 1 && existsSync(pidFile), 'the task to start');
    await agents.b.stop('SIGKILL');
    // The task's process group outlives the agent; stop it so nothing lingers.
    process.kill(-Number((await readFile(pidFile, 'utf8')).trim()), 'SIGKILL');

    const killedAt = Date.now();
    await waitFor(async () => (await redis.exists(presence)) === 0, 'the presence key to expire', 5000);
    expect(Date.now() - killedAt).toBeLessThanOrEqual(3000 + 500);

    await agents.b.start();
    const got = await finished(d);
    expect(got.map((r) => [r.status, r.error])).toEqual([
      ['started', undefined],
      ['failed', AGENT_RESTARTED_ERROR],
    ]);
    expect(await readFile(path.join(rootOf('b'), 'sleep.log'), 'utf8')).toBe('ran\n');
    // The interrupted delivery was acknowledged: node-b takes new work at once, not after the ack wait.
    const next = await dispatch('b', 'shell', { cmd: 'echo next' });
    expect((await finished(next, 1, 5000)).map((r) => r.status)).toEqual(['started', 'succeeded']);
    expect(resultsOf(d)).toHaveLength(2);
  });

  it('(g) a reboot task stays pending after its command and succeeds when the agent is back', async () => {
    const d = await dispatch('b', 'reboot', { timeout: 60 });
    await waitFor(() => agents.b.lines.some((l) => l.key === d.key && l.msg === 'reboot command issued; the task completes when the agent is back'), 'the reboot command');
    expect(resultsOf(d).map((r) => r.status)).toEqual(['started']);
    // The host "reboots": the service manager stops the agent and starts it again.
    expect(await agents.b.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(resultsOf(d).map((r) => r.status)).toEqual(['started']);
    await agents.b.start();
    const got = await finished(d);
    expect(got.map((r) => r.status)).toEqual(['started', 'succeeded']);
    expect(got[1].exitCode).toBe(0);
  });

  it('(e) SIGTERM mid-task: the task is cancelled and reported, the presence key deleted, exit 0', async () => {
    const presence = redisKeys(prefix).presence('node-a');
    const value = JSON.parse((await redis.get(presence)) as string) as { uid: string; at: string };
    expect(value.uid).toBe('node-a');
    expect(Date.now() - Date.parse(value.at)).toBeLessThan(3000);
    expect(await redis.ttl(presence)).toBeGreaterThan(0);

    const d = await dispatch('a', 'shell', { cmd: 'echo waiting; sleep 30' });
    await waitFor(() => output.some((o) => o.key === d.key), 'the task to run');
    expect(await agents.a.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(resultsOf(d).map((r) => [r.status, r.error])).toEqual([
      ['started', undefined],
      ['failed', AGENT_STOPPED_ERROR],
    ]);
    expect(await redis.exists(presence)).toBe(0);
    expect(agents.a.lines.map((l) => l.msg).slice(-3)).toEqual(['node-agent stopping', 'task failed', 'node-agent stopped']);
    // JSON log lines carry the run, the task key and the node.
    expect(agents.a.lines.at(-2)).toMatchObject({ level: 'warn', node: 'node-a', runId, key: d.key, dispatchId: d.dispatchId, status: 'failed', error: AGENT_STOPPED_ERROR });
  });
});
