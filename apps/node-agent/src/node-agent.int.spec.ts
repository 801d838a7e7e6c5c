import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  dispatchIdOf,
  executionSubjects,
  type AgentHeartbeat,
  type TaskDispatchMessage,
  type TaskOutputMessage,
  type TaskProgressMessage,
} from '@granule/contracts';
import {
  connectTestNats,
  decodeJson,
  deleteExecutionStreams,
  ensureAgentConsumer,
  ensureExecutionStreams,
  testServicesEnv,
  testServices,
  waitUntil,
} from '@granule/messaging';
import { signMessage } from '@granule/nats-auth';
import type { TaskType } from '@granule/task-model';
import { currentBootId, journalKey, processStartTime } from '@granule/task-runners';
import {
  jetstream,
  jetstreamManager,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { AGENT_STATE_FILE } from './agent-state.store';
import { AGENT_RESTARTED_ERROR, AGENT_STOPPED_ERROR, type TaskMarker } from './dispatch-decision';
import {
  AgentProcess,
  buildIfStale,
  killGroupQuietly,
  processRunning,
  runAgentOnce,
} from './testing/agent-process.fixture';

jest.setTimeout(60_000);

describe('node-agent processes', () => {
  // Own subject prefix (streams, subjects, Redis keys) so other suites never interfere.
  const prefix = `t${randomBytes(4).toString('hex')}`;
  const s = executionSubjects(prefix);
  const runId = `run-${randomBytes(3).toString('hex')}`;
  let base: string;
  let nc: NatsConnection;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  const heartbeats: Array<AgentHeartbeat & { subject: string; receivedAt: number }> = [];
  let resultsFeed: ConsumerMessages;
  const results: TaskProgressMessage[] = [];
  const output: TaskOutputMessage[] = [];
  const agents: Record<'a' | 'b', AgentProcess> = {} as Record<'a' | 'b', AgentProcess>;
  const rootOf = (node: 'a' | 'b'): string => path.join(base, `root-${node}`);
  const uidOf = (node: 'a' | 'b'): string => `node-${node}`;

  let seq = 0;
  /**
   * Publishes a dispatch as the orchestrator does: signed with an orchestrator's credential (an
   * agent on an authorized NATS runs nothing else).
   */
  const publishDispatch = (subject: string, message: TaskDispatchMessage, msgID: string) => {
    const data = new TextEncoder().encode(JSON.stringify(message));
    const h = natsHeaders();
    const signed = signMessage(readFileSync(testServices().orchestratorCreds, 'utf8'), subject, data);
    for (const [k, v] of Object.entries(signed)) h.set(k, v);
    return js.publish(subject, data, { msgID, headers: h });
  };
  async function dispatch(
    node: 'a' | 'b',
    type: TaskType,
    parameters: Record<string, unknown>,
    msgID?: string,
  ): Promise<TaskDispatchMessage> {
    const task = `task-${++seq}`;
    const key = `${task}@${uidOf(node)}`;
    const message: TaskDispatchMessage = {
      runId,
      key,
      task,
      node: uidOf(node),
      type,
      parameters,
      attempt: 1,
      dispatchId: dispatchIdOf(runId, key, 1),
      noop: false,
    };
    await publishDispatch(s.dispatch.forNode(uidOf(node)), message, msgID ?? message.dispatchId);
    return message;
  }
  /** The outcomes among a dispatch's progress messages (`started` comes only for a task that runs long enough). */
  const outcomesOf = (got: TaskProgressMessage[]): TaskProgressMessage[] => got.filter((r) => r.status !== 'started');
  const resultsOf = (d: TaskDispatchMessage): TaskProgressMessage[] =>
    results.filter((r) => r.dispatchId === d.dispatchId);
  async function finished(d: TaskDispatchMessage, count = 1, timeoutMs = 15_000): Promise<TaskProgressMessage[]> {
    await waitUntil(() => outcomesOf(resultsOf(d)).length >= count, `${count} final result(s) of ${d.key}`, timeoutMs);
    return resultsOf(d);
  }

  beforeAll(async () => {
    buildIfStale();
    base = await mkdtemp(path.join(tmpdir(), 'granule-agent-it-'));
    nc = await connectTestNats('node-agent-int-test');
    js = jetstream(nc);
    jsm = await jetstreamManager(nc);
    nc.subscribe(s.agents.heartbeats, {
      callback: (_err, m) =>
        void heartbeats.push({ ...decodeJson<AgentHeartbeat>(m), subject: m.subject, receivedAt: Date.now() }),
    });
    // What the orchestrator does: the streams at its start, each node's consumer when its agent registers.
    await ensureExecutionStreams(jsm, prefix);
    for (const node of ['a', 'b'] as const) await ensureAgentConsumer(jsm, prefix, uidOf(node));
    const feed = await js.consumers.get(s.results.stream); // ordered consumer over every result
    resultsFeed = await feed.consume();
    void (async () => {
      for await (const m of resultsFeed) results.push(decodeJson<TaskProgressMessage>(m));
    })();
    nc.subscribe(s.output.all, { callback: (_err, m) => void output.push(decodeJson<TaskOutputMessage>(m)) });
    // Both ways of starting task processes (ADR 0009): a through Node.js's child_process, b through the native helper.
    for (const node of ['a', 'b'] as const) {
      agents[node] = new AgentProcess({
        GRANULE_SPAWN_HELPER: node === 'a' ? 'node' : 'native',
        GRANULE_NODE_UID: uidOf(node),
        GRANULE_ROOT: rootOf(node),
        GRANULE_NATS_URL: testServicesEnv().GRANULE_NATS_URL,
        GRANULE_NATS_CREDS: testServicesEnv().GRANULE_NATS_CREDS,
        GRANULE_SUBJECT_PREFIX: prefix,
        GRANULE_HEARTBEAT_SECONDS: '1',
        GRANULE_REBOOT_COMMAND: 'true',
      });
    }
    await Promise.all([agents.a.start(), agents.b.start()]);
  });

  afterAll(async () => {
    await Promise.all(Object.values(agents).map((a) => (a.running ? a.stop('SIGKILL') : undefined)));
    await resultsFeed?.close();
    if (jsm) await deleteExecutionStreams(jsm, prefix);
    await nc?.close();
    if (base) await rm(base, { recursive: true, force: true });
  });

  it('refuses to start on bad configuration with one line naming every problem, exit 1', async () => {
    const { code, stdout, stderr } = await runAgentOnce({
      GRANULE_ROOT: 'relative',
      GRANULE_HEARTBEAT_SECONDS: 'soon',
    });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      'node-agent: invalid configuration: GRANULE_NODE_UID: must be set to the uid of this node as the plan names it (it is not set); ' +
        'GRANULE_ROOT: must be an absolute path (got "relative"); GRANULE_HEARTBEAT_SECONDS: must be a whole number of seconds (got "soon")\n',
    );
  });

  it('refuses to start when NATS is unreachable, naming the address and the fix', async () => {
    const { code, stderr } = await runAgentOnce({
      GRANULE_NODE_UID: 'x',
      GRANULE_ROOT: path.join(base, 'root-x'),
      GRANULE_NATS_URL: 'nats://127.0.0.1:1',
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /^node-agent: cannot reach NATS at nats:\/\/127\.0\.0\.1:1: .+ — start it \(tools\/setup\.sh\) or set GRANULE_NATS_URL\n$/,
    );
  });

  it('(a) a shell task runs on the addressed agent only; it succeeds with the output tail and the time it started', async () => {
    const d = await dispatch('a', 'shell', { cmd: 'echo "made by $GRANULE_NODE_UID" > effect.txt; echo done-a' });
    const [outcome, ...more] = outcomesOf(await finished(d));
    expect(more).toEqual([]);
    expect(outcome).toMatchObject({
      runId,
      key: d.key,
      node: 'node-a',
      attempt: 1,
      status: 'succeeded',
      exitCode: 0,
      outputTail: 'done-a\n',
    });
    expect(outcome.fromJournal).toBeUndefined();
    expect(Date.parse(outcome.startedAt as string)).toBeLessThanOrEqual(Date.parse(outcome.at));
    expect(await readFile(path.join(rootOf('a'), 'effect.txt'), 'utf8')).toBe('made by node-a\n');
    expect(existsSync(path.join(rootOf('b'), 'effect.txt'))).toBe(false);
    await waitUntil(() => output.some((o) => o.key === d.key), 'live output');
    expect(output.filter((o) => o.key === d.key)).toEqual([
      { runId, key: d.key, node: 'node-a', stream: 'stdout', seq: 0, data: 'done-a\n' },
    ]);
    // The log says how long the agent held the dispatch (delivery to report), the task's process included.
    const logged = agents.a.lines.find((l) => l.key === d.key && l.msg === 'task succeeded') as {
      handledMs: number;
      durationMs: number;
    };
    expect(logged.handledMs).toBeGreaterThanOrEqual(logged.durationMs - 1); // durationMs is rounded
    expect(logged.handledMs).toBeLessThan(10_000);
    expect(agents.a.lines.find((l) => l.msg === 'node-agent started')).toMatchObject({ spawnHelper: 'node' });
    expect(agents.b.lines.find((l) => l.msg === 'node-agent started')).toMatchObject({ spawnHelper: 'native' });
  });

  it('(b) a redelivered dispatch is answered from the journal and the command ran once', async () => {
    const d = await dispatch('a', 'shell', { cmd: 'echo run >> count.log; echo counted' });
    await finished(d);
    // The same msgID again is dropped by the DISPATCH stream (de-duplication window).
    expect((await publishDispatch(s.dispatch.forNode('node-a'), d, d.dispatchId)).duplicate).toBe(true);
    // A new msgID gets through: what a redelivery looks like to the agent.
    expect((await publishDispatch(s.dispatch.forNode('node-a'), d, `${d.dispatchId}#again`)).duplicate).toBe(false);
    const got = await finished(d, 2);
    expect(outcomesOf(got).map((r) => [r.status, r.fromJournal ?? false])).toEqual([
      ['succeeded', false],
      ['succeeded', true],
    ]);
    expect(outcomesOf(got)[1]).toMatchObject({ exitCode: 0, outputTail: 'counted\n' });
    expect(await readFile(path.join(rootOf('a'), 'count.log'), 'utf8')).toBe('run\n');
  });

  it('(c) upload_file outside the allowed roots fails with the clear error and writes nothing', async () => {
    const outside = path.join(base, 'outside', 'x.conf');
    const d = await dispatch('b', 'upload_file', { path: outside, data: 'x=1\n' });
    const got = await finished(d);
    // Refused in-process, long before STARTED_REPORT_DELAY_MS: no `started`, the outcome says when it began.
    expect(got.map((r) => r.status)).toEqual(['failed']);
    expect(got[0].startedAt).toEqual(expect.any(String));
    expect(got[0].error).toBe(`upload_file path '${outside}' is outside the allowed roots (${rootOf('b')})`);
    expect(existsSync(outside)).toBe(false);
  });

  it('(f) a puppet task applies a manifest that writes under the root', async () => {
    const target = path.join(rootOf('a'), 'puppet-made.txt');
    await writeFile(
      path.join(rootOf('a'), 'site.pp'),
      `file { '${target}': ensure => file, content => "made by puppet\\n" }\n`,
    );
    const d = await dispatch('a', 'puppet', { puppet_manifest: 'site.pp' });
    const got = await finished(d, 1, 45_000);
    // puppet runs for seconds: `started` is reported while it runs, with the start time the outcome repeats.
    expect(got.map((r) => r.status)).toEqual(['started', 'succeeded']);
    expect(got[0].at).toBe(got[1].startedAt);
    expect(got[1].exitCode).toBe(2); // puppet's detailed exit code: changes applied
    expect(await readFile(target, 'utf8')).toBe('made by puppet\n');
  });

  it('(d, e) SIGKILL mid-task: its heartbeats stop; after a restart the leftover processes are stopped and the task is failed, not run again', async () => {
    const beatsOf = (uid: string) => heartbeats.filter((h) => h.subject === s.agents.heartbeatFrom(uid));
    expect(beatsOf('node-b').at(-1)).toMatchObject({ uid: 'node-b' });
    const pidFile = path.join(rootOf('b'), 'shell.pid');
    const sleepPidFile = path.join(rootOf('b'), 'sleep.pid');
    const stateFile = path.join(rootOf('b'), '.granule', AGENT_STATE_FILE);
    const d = await dispatch('b', 'shell', {
      cmd: `echo $$ > '${pidFile}'; echo ran >> sleep.log; sleep 30 & echo $! > '${sleepPidFile}'; wait`,
    });
    const pidIn = (file: string): number => Number(readFileSync(file, 'utf8').trim());
    const written = (file: string): boolean => existsSync(file) && readFileSync(file, 'utf8').endsWith('\n');
    await waitUntil(() => resultsOf(d).length === 1 && written(pidFile) && written(sleepPidFile), 'the task to start');
    const [shell, sleeper] = [pidIn(pidFile), pidIn(sleepPidFile)];
    try {
      // The agent records the attempt's process group right after starting it (the state file's last line).
      const lastState = (): { running?: TaskMarker } =>
        JSON.parse(readFileSync(stateFile, 'utf8').trimEnd().split('\n').pop() as string);
      await waitUntil(() => lastState().running?.process?.pgid === shell, 'the process group in the agent state');
      await agents.b.stop('SIGKILL');
      // The task's process group outlives the agent.
      expect([processRunning(shell), processRunning(sleeper)]).toEqual([true, true]);

      // No more heartbeats, and no `leaving` one: the orchestrator lets the presence lapse after its TTL.
      const killedAt = Date.now();
      await new Promise((r) => setTimeout(r, 2500));
      expect(beatsOf('node-b').filter((h) => h.receivedAt > killedAt + 100)).toEqual([]);
      expect(beatsOf('node-b').some((h) => h.leaving)).toBe(false);

      await agents.b.start();
      const got = await finished(d);
      expect(got.map((r) => [r.status, r.error])).toEqual([
        ['started', undefined],
        ['failed', 'agent restarted while the task was running; not run again (its leftover processes were stopped)'],
      ]);
      // Stopped before the failure was reported.
      expect([processRunning(shell), processRunning(sleeper)]).toEqual([false, false]);
      expect(
        agents.b.lines.find((l) => l.msg === 'stopped the processes the interrupted task left running'),
      ).toMatchObject({ key: d.key, pgid: shell, pids: [shell, sleeper].sort((x, y) => x - y), leftover: 'stopped' });
      expect(await readFile(path.join(rootOf('b'), 'sleep.log'), 'utf8')).toBe('ran\n');
      // The interrupted delivery was acknowledged: node-b takes new work at once, not after the ack wait.
      const next = await dispatch('b', 'shell', { cmd: 'echo next' });
      expect(outcomesOf(await finished(next, 1, 5000)).map((r) => r.status)).toEqual(['succeeded']);
      expect(resultsOf(d)).toHaveLength(2);
    } finally {
      killGroupQuietly(shell);
    }
  });

  it("(d) a recorded process group whose leader started at another time is not the task's: it is left running", async () => {
    const unrelated = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    unrelated.unref();
    const pgid = unrelated.pid as number;
    try {
      await waitUntil(() => processStartTime(pgid) !== undefined, 'the unrelated sleep to start');
      expect(await agents.b.stop('SIGTERM')).toEqual({ code: 0, signal: null });
      const key = 'ghost@node-b';
      const marker: TaskMarker = {
        dispatchId: dispatchIdOf(runId, key, 1),
        journalKey: journalKey({ runId, taskId: 'ghost', nodeUid: 'node-b', attempt: 1 }),
        runId,
        key,
        node: 'node-b',
        attempt: 1,
        type: 'shell',
        startedAt: new Date().toISOString(),
        process: {
          pgid,
          startTime: (processStartTime(pgid) as number) + 1,
          bootId: currentBootId(),
          runId,
          taskId: 'ghost',
        },
      };
      await writeFile(
        path.join(rootOf('b'), '.granule', AGENT_STATE_FILE),
        JSON.stringify({ version: 1, running: marker, pendingReboots: [] }),
      );

      await agents.b.start();
      await waitUntil(() => results.some((r) => r.dispatchId === marker.dispatchId), 'the ghost task to be reported');
      expect(results.filter((r) => r.dispatchId === marker.dispatchId).map((r) => [r.status, r.error])).toEqual([
        ['failed', AGENT_RESTARTED_ERROR],
      ]);
      expect(processRunning(pgid)).toBe(true);
      expect(agents.b.lines.find((l) => l.key === key && l.pgid === pgid)).toMatchObject({
        msg: 'the recorded process group id now belongs to other processes; left alone',
        pids: [pgid],
        leftover: 'unconfirmed',
      });
    } finally {
      killGroupQuietly(pgid);
    }
  });

  it('(g) a reboot task stays pending after its command and succeeds when the agent is back', async () => {
    const d = await dispatch('b', 'reboot', { timeout: 60 });
    await waitUntil(
      () =>
        agents.b.lines.some(
          (l) => l.key === d.key && l.msg === 'reboot command issued; the task completes when the agent is back',
        ),
      'the reboot command',
    );
    expect(outcomesOf(resultsOf(d))).toEqual([]);
    // The host "reboots": the service manager stops the agent and starts it again.
    expect(await agents.b.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(outcomesOf(resultsOf(d))).toEqual([]);
    await agents.b.start();
    const [outcome, ...more] = outcomesOf(await finished(d));
    expect(more).toEqual([]);
    expect(outcome).toMatchObject({ status: 'succeeded', exitCode: 0, startedAt: expect.any(String) });
  });

  it('(e) SIGTERM mid-task: the task is cancelled and reported, a last heartbeat says the agent is leaving, exit 0', async () => {
    const beats = () => heartbeats.filter((h) => h.subject === s.agents.heartbeatFrom('node-a'));
    const last = beats().at(-1) as AgentHeartbeat;
    expect(last.uid).toBe('node-a');
    expect(Date.now() - Date.parse(last.at)).toBeLessThan(3000);
    expect(last.leaving).toBeUndefined();

    const d = await dispatch('a', 'shell', { cmd: 'echo waiting; sleep 30' });
    await waitUntil(() => output.some((o) => o.key === d.key), 'the task to run');
    expect(await agents.a.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(outcomesOf(resultsOf(d)).map((r) => [r.status, r.error, typeof r.startedAt])).toEqual([
      ['failed', AGENT_STOPPED_ERROR, 'string'],
    ]);
    await waitUntil(() => beats().at(-1)?.leaving === true, 'the leaving heartbeat', 2000);
    expect(agents.a.lines.map((l) => l.msg).slice(-3)).toEqual([
      'node-agent stopping',
      'task failed',
      'node-agent stopped',
    ]);
    // JSON log lines carry the run, the task key and the node.
    expect(agents.a.lines.at(-2)).toMatchObject({
      level: 'warn',
      node: 'node-a',
      runId,
      key: d.key,
      dispatchId: d.dispatchId,
      status: 'failed',
      error: AGENT_STOPPED_ERROR,
    });
  });
});
