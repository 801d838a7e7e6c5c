import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import type { TaskDispatchMessage, TaskProgressMessage } from '@granule/contracts';
import { signMessage } from '@granule/nats-auth';
import { E2eStack, FIXTURES, keysOf, sleep, waitUntil, type StoredEvent } from './stack';

// Crashes: the orchestrator and an agent are killed with SIGKILL in the middle of a run of
// four workers x six chained steps (0.3 s each), then started again; and with two orchestrator
// replicas, the one driving a run is killed for good. The run lease is 10 s here, so a restarted
// orchestrator that waited for its own lease to lapse would show it (ADR 0028).
const LEASE_MS = 10_000;
const TICK_MS = 200;
const CHAIN = ['--tasks', path.join(FIXTURES, 'chain/tasks.yaml'), '--nodes', path.join(FIXTURES, 'chain/nodes.yaml')];
const EVERY_KEY = ['1', '2', '3', '4'].flatMap((n) => [1, 2, 3, 4, 5, 6].map((s) => `step${s}@${n}`)).sort();

/** Prints a measured figure where the test run's output shows it (jest leaves stdout alone). */
function figure(line: string): void {
  process.stdout.write(`recovery figure: ${line}\n`);
}

function countBy(list: string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const x of list) out.set(x, (out.get(x) ?? 0) + 1);
  return out;
}

describe('crash recovery (whole stack)', () => {
  let stack: E2eStack;

  beforeAll(async () => {
    // A presence TTL long enough for an agent to come back before its node counts as offline.
    stack = await E2eStack.start({
      name: 'recovery',
      agents: ['1', '2', '3', '4'],
      presenceTtlSeconds: 10,
      leaseMs: LEASE_MS,
      tickMs: TICK_MS,
    });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  }, 60_000);

  /** When the first TaskDispatched recorded at or after `since` (ms) was recorded (the database's clock: this machine's). */
  async function nextDispatchAt(runId: string, since: number): Promise<number> {
    const later = (e: StoredEvent): boolean => e.type === 'TaskDispatched' && e.at.getTime() >= since;
    const events = await stack.waitForEvent(runId, 'TaskDispatched', later, 60_000);
    return (events.find(later) as StoredEvent).at.getTime();
  }

  it('orchestrator SIGKILLed mid-run and started again - it takes its lease back at once, the run succeeds, every task ran exactly once, none dispatched twice', async () => {
    const watch = stack.granule(['deploy', ...CHAIN, '--run-id', 'crash-orch', '--watch'], { timeoutMs: 120_000 });
    const before = await stack
      .waitForEvent('crash-orch', 'TaskSucceeded', () => true, 30_000)
      .then(() =>
        waitUntil(async () => {
          const events = await stack.events('crash-orch');
          return keysOf(events, 'TaskSucceeded').length >= 5 ? events : undefined;
        }, 'five TaskSucceeded events'),
      );
    await stack.service('orchestrator').kill('SIGKILL');
    const atKill = (await stack.events('crash-orch')).length;
    expect(keysOf(before, 'TaskSucceeded').length).toBeLessThan(24);
    await sleep(500);
    const spawned = Date.now();
    await stack.service('orchestrator').start();
    const ready = Date.now();
    const dispatched = await nextDispatchAt('crash-orch', spawned);
    figure(
      `resume after SIGKILL: next task dispatched ${dispatched - ready} ms after the restarted orchestrator was ready (${dispatched - spawned} ms after its process started; run lease ${LEASE_MS} ms)`,
    );
    // The lease it held is taken back at once, not after it lapses (about 9 s from here).
    expect(dispatched - ready).toBeLessThan(2000);
    expect(dispatched - spawned).toBeLessThan(4000);
    expect(stack.service('orchestrator').text).toContain("took back a lease from this replica's previous process");
    const events = await stack.waitForEnd('crash-orch');
    expect(events[events.length - 1].type).toBe('DeploymentSucceeded');
    // The new orchestrator drove the rest of the run.
    expect(keysOf(events.slice(atKill), 'TaskSucceeded').length).toBeGreaterThan(0);
    // Every step ran once: no task lost, none run twice.
    expect([...countBy(stack.ledger('crash-orch')).entries()].sort()).toEqual(EVERY_KEY.map((k) => [k, 1]));
    const dispatches = events.filter((e) => e.type === 'TaskDispatched');
    expect(dispatches.map((e) => String(e.data.key)).sort()).toEqual(EVERY_KEY);
    expect(new Set(dispatches.map((e) => e.data.dispatchId)).size).toBe(24);
    expect(dispatches.every((e) => e.data.attempt === 1)).toBe(true);
    expect(keysOf(events, 'TaskSucceeded').sort()).toEqual(EVERY_KEY);
    // The operator's watch outlived the orchestrator: it follows the EVENTS stream (ADR 0033),
    // which needs no orchestrator, and printed every event once, in order.
    const r = await watch;
    expect([r.code, r.stdout.split('\n')[0]]).toEqual([0, 'RECAP run crash-orch: succeeded']);
    const printed = [...r.stderr.matchAll(/^\d\d:\d\d:\d\d {2}#(\d+) /gm)].map((m) => Number(m[1]));
    expect(printed).toEqual(events.map((_, i) => i + 1));
    expect(r.stderr).not.toContain('no orchestrator answers');
    expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(/#\d+ +DeploymentSucceeded$/);
  }, 120_000);

  it('a dispatch delivered again for a finished task - the agent answers from its journal and does not run it again', async () => {
    const nc = await stack.natsConnection();
    const results = nc.subscribe(stack.subjects.results.forRun('crash-orch'));
    const dispatch: TaskDispatchMessage = {
      runId: 'crash-orch',
      key: 'step1@1',
      task: 'step1',
      node: '1',
      type: 'shell',
      parameters: { cmd: 'echo "crash-orch step1@1" >> "$GRANULE_E2E_LEDGER"', retries: 0 },
      attempt: 1,
      dispatchId: 'crash-orch/step1@1/1',
      noop: false,
    };
    const js = jetstream(nc);
    // The same message id as the orchestrator's is dropped by JetStream's duplicate window...
    const duplicate = await js.publish(stack.subjects.dispatch.forNode('1'), JSON.stringify(dispatch), {
      msgID: dispatch.dispatchId,
    });
    expect(duplicate.duplicate).toBe(true);
    // ...a new one reaches the agent, which answers from its journal.
    // Signed with the orchestrator's credential: the agent runs (or answers) only the orchestrator's dispatches.
    const data = new TextEncoder().encode(JSON.stringify(dispatch));
    const headers = natsHeaders();
    const signature = signMessage(
      readFileSync(stack.credsFile('orchestrator'), 'utf8'),
      stack.subjects.dispatch.forNode('1'),
      data,
    );
    for (const [k, v] of Object.entries(signature)) headers.set(k, v);
    const ack = await js.publish(stack.subjects.dispatch.forNode('1'), data, {
      msgID: `e2e-redelivery-${Date.now()}`,
      headers,
    });
    expect(ack.duplicate).toBe(false);
    let answer: TaskProgressMessage | undefined;
    const timer = setTimeout(() => results.unsubscribe(), 15_000);
    for await (const msg of results) {
      answer = JSON.parse(msg.string()) as TaskProgressMessage;
      break;
    }
    clearTimeout(timer);
    expect(answer).toEqual(
      expect.objectContaining({
        runId: 'crash-orch',
        key: 'step1@1',
        dispatchId: 'crash-orch/step1@1/1',
        attempt: 1,
        status: 'succeeded',
        exitCode: 0,
        fromJournal: true,
      }),
    );
    await sleep(500);
    expect(stack.ledger('crash-orch').filter((k) => k === 'step1@1')).toEqual(['step1@1']);
    expect(stack.agent('1').text).toContain('dispatch delivered again; answered from the journal, not run again');
  }, 30_000);

  it('agent SIGKILLed while its task runs and started again - the task is reported failed, not run again; the critical node fails the run', async () => {
    stack.setSlow('step3@2', 20);
    const started = await stack.granule(['deploy', ...CHAIN, '--run-id', 'crash-agent']);
    stack.assertExitedOk(started, 'granule deploy crash-agent');
    await stack.waitForEvent('crash-agent', 'TaskStarted', (e) => e.data.key === 'step3@2');
    const startedLog = path.join(stack.dir, 'started.log');
    await waitUntil(
      () => existsSync(startedLog) && readFileSync(startedLog, 'utf8').includes('crash-agent step3@2 started'),
      'step3@2 to start its sleep',
    );
    await stack.agent('2').kill('SIGKILL');
    await stack.agent('2').start();
    stack.setSlow('step3@2', 0);
    const events = await stack.waitForEnd('crash-agent');
    const failed = events.find((e) => e.type === 'TaskFailed');
    expect(failed?.data).toEqual(
      expect.objectContaining({
        key: 'step3@2',
        attempt: 1,
        exitCode: null,
        error: 'agent restarted while the task was running; not run again (its leftover processes were stopped)',
      }),
    );
    expect(events.filter((e) => e.type === 'NodeFailed').map((e) => e.data)).toEqual([
      { node: '2', reason: 'task_failed', task: 'step3' },
    ]);
    expect(events.find((e) => e.type === 'DeploymentStopRequested')?.data).toEqual({
      reason: 'critical_node',
      detail: 'node 2 failed and belongs to no fault-tolerance group',
    });
    expect(events[events.length - 1].type).toBe('DeploymentFailed');
    // Dispatched once, started once, never run again after the restart.
    expect(keysOf(events, 'TaskDispatched').filter((k) => k === 'step3@2')).toEqual(['step3@2']);
    expect(
      readFileSync(startedLog, 'utf8')
        .split('\n')
        .filter((l) => l === 'crash-agent step3@2 started'),
    ).toHaveLength(1);
    expect(keysOf(events, 'TaskDispatched').filter((k) => k.endsWith('@2'))).toEqual(['step1@2', 'step2@2', 'step3@2']);
  }, 90_000);
  it('two orchestrator replicas, the one driving a run SIGKILLed for good - the other takes the run over once the lease has lapsed, every task once', async () => {
    await stack.service('orchestrator-2').start();
    const started = await stack.granule(['deploy', ...CHAIN, '--run-id', 'takeover']);
    stack.assertExitedOk(started, 'granule deploy takeover');
    await waitUntil(
      async () => keysOf(await stack.events('takeover'), 'TaskSucceeded').length >= 5,
      'five TaskSucceeded events',
    );
    const holder = await stack.redisClient().get(`${stack.prefix}:lease:run:takeover`);
    const driver = holder?.startsWith('orchestrator-2#') ? 'orchestrator-2' : 'orchestrator';
    expect(holder?.startsWith(`${driver}#`)).toBe(true);
    await stack.service(driver).kill('SIGKILL');
    const killed = Date.now();
    const dispatched = await nextDispatchAt('takeover', killed);
    figure(
      `takeover by the surviving replica: next task dispatched ${dispatched - killed} ms after the driving replica was killed (run lease ${LEASE_MS} ms, tick ${TICK_MS} ms)`,
    );
    // Not before the lease lapsed (the survivor is another replica), and within a tick or two after.
    expect(dispatched - killed).toBeGreaterThan(LEASE_MS - 1000);
    expect(dispatched - killed).toBeLessThan(LEASE_MS + 2 * TICK_MS + 2000);
    const events = await stack.waitForEnd('takeover');
    expect(events[events.length - 1].type).toBe('DeploymentSucceeded');
    expect([...countBy(stack.ledger('takeover')).entries()].sort()).toEqual(EVERY_KEY.map((k) => [k, 1]));
    expect(keysOf(events, 'TaskDispatched').sort()).toEqual(EVERY_KEY);
  }, 120_000);
});
