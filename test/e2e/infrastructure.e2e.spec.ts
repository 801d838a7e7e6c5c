import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { startPrivatePostgres, type PrivatePostgres } from '@granule/event-store';
import type { PrivateServer } from '@granule/messaging';
import { E2eStack, FIXTURES, keysOf, sleep, waitUntil, type CliResult, type StoredEvent } from './stack';

// The infrastructure restarts under a run: the stack runs on a NATS, a Redis and a PostgreSQL
// cluster of its own (real servers on ports of their own), which are restarted while four workers are in the
// middle of six chained steps. A restart is an outage, not a failure of the fleet: the run must
// succeed with every task run once.
const CHAIN = ['--tasks', path.join(FIXTURES, 'chain/tasks.yaml'), '--nodes', path.join(FIXTURES, 'chain/nodes.yaml')];
const NODES = ['1', '2', '3', '4'];
const EVERY_KEY = NODES.flatMap((n) => [1, 2, 3, 4, 5, 6].map((s) => `step${s}@${n}`)).sort();

describe('NATS, Redis and PostgreSQL restarted under a run (whole stack)', () => {
  let nats: PrivateServer;
  let redis: PrivateServer;
  let postgres: PrivatePostgres;
  let stack: E2eStack;

  beforeAll(async () => {
    postgres = await startPrivatePostgres();
    // Heartbeats every 2 s, presence TTL 4 s: a node whose key is missing for a tick would be
    // failed at once if a missing key were always taken for a dead agent. The stack runs its own
    // NATS (with authorization on) and Redis (with a password).
    stack = await E2eStack.start({
      name: 'infra',
      agents: NODES,
      databaseAdminUrl: postgres.adminUrl,
      heartbeatSeconds: 2,
      presenceTtlSeconds: 4,
    });
    nats = stack.natsServer as PrivateServer;
    redis = stack.redisServer as PrivateServer;
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    await postgres?.stop();
  }, 60_000);

  /** Makes step3 take `seconds` on every worker, deploys, and waits until all four are in it. */
  async function deployAndWaitForStep3(
    runId: string,
    seconds: number,
    watch = false,
  ): Promise<Promise<CliResult> | undefined> {
    for (const n of NODES) stack.setSlow(`step3@${n}`, seconds);
    let watching: Promise<CliResult> | undefined;
    if (watch) {
      watching = stack.granule(['deploy', ...CHAIN, '--run-id', runId, '--watch']);
      await stack.waitForEvent(runId, 'TaskDispatched');
    } else {
      stack.assertExitedOk(await stack.granule(['deploy', ...CHAIN, '--run-id', runId]), `granule deploy ${runId}`);
    }
    const startedLog = path.join(stack.dir, 'started.log');
    await waitUntil(async () => {
      const ended = (await stack.events(runId)).find(
        (e) => e.type === 'DeploymentRefused' || e.type === 'DeploymentFailed',
      );
      if (ended)
        throw new Error(
          `run ${runId} ended before step3 ran everywhere: ${ended.type} ${JSON.stringify(ended.data)}\n${stack.logsTail(20)}`,
        );
      return (
        existsSync(startedLog) &&
        NODES.every((n) => readFileSync(startedLog, 'utf8').includes(`${runId} step3@${n} started`))
      );
    }, 'step3 to be running on every worker');
    for (const n of NODES) stack.setSlow(`step3@${n}`, 0);
    return watching;
  }

  function expectEveryTaskOnce(runId: string, events: StoredEvent[]): void {
    expect(events.filter((e) => e.type === 'NodeFailed').map((e) => e.data)).toEqual([]);
    expect(events[events.length - 1].type).toBe('DeploymentSucceeded');
    const ran = stack.ledger(runId);
    expect([...ran].sort()).toEqual(EVERY_KEY);
    const dispatched = events.filter((e) => e.type === 'TaskDispatched');
    expect(dispatched.map((e) => String(e.data.key)).sort()).toEqual(EVERY_KEY);
    expect(dispatched.every((e) => e.data.attempt === 1)).toBe(true);
    expect(keysOf(events, 'TaskSucceeded').sort()).toEqual(EVERY_KEY);
  }

  it('Redis restarted mid-run (every presence key and run lease lost) - no node is failed or marked offline, the run succeeds, every task once', async () => {
    await deployAndWaitForStep3('infra-redis', 3);
    const restartedAt = new Date();
    const logBefore = stack.service('orchestrator').text.length;
    // Agent 2 is frozen over the restart, as an agent on a loaded host that is slow to reconnect:
    // its key stays missing for 2 s after Redis is back, well over a tick of the orchestrator.
    const frozen = stack.agent('2').pid as number;
    process.kill(frozen, 'SIGSTOP');
    try {
      await redis.restart(300);
      await sleep(2000);
    } finally {
      process.kill(frozen, 'SIGCONT');
    }
    const events = await stack.waitForEnd('infra-redis');
    expectEveryTaskOnce('infra-redis', events);
    // The agents set their keys again as soon as they were connected, not at their next beat.
    await waitUntil(
      async () =>
        (await stack.redisClient().exists(...NODES.map((n) => `${stack.prefix}:presence:${n}`))) === NODES.length,
      'presence keys back',
    );
    // No node stream says the node went offline.
    const offline: { stream_id: string }[] = await stack.dataSource.query(
      `SELECT stream_id FROM granule_events WHERE type = 'NodeWentOffline' AND created_at >= $1`,
      [restartedAt],
    );
    expect(offline).toEqual([]);
    // A tick that met the outage says what is wrong in words, once.
    const tickFailures = stack
      .service('orchestrator')
      .text.slice(logBefore)
      .split('\n')
      .filter((l) => l.includes('"msg":"tick failed; trying again every tick"'));
    expect(tickFailures.length).toBeLessThanOrEqual(1);
    for (const line of tickFailures)
      expect(line).toContain('"err":"Redis does not answer: the connection is down and the client is reconnecting"');
  }, 120_000);

  it('NATS restarted mid-run (agents report while it is down) - the run succeeds, every task once, none dispatched twice', async () => {
    const watch = await deployAndWaitForStep3('infra-nats', 2, true);
    // Down for longer than step3 has left to run: the outcomes are reported while NATS is away.
    await nats.restart(3000);
    const events = await stack.waitForEnd('infra-nats');
    expectEveryTaskOnce('infra-nats', events);
    // The operator's watch outlived the outage and saw the run to its end.
    const r = (await watch) as CliResult;
    expect([r.code, r.stdout.split('\n')[0]]).toEqual([0, 'RECAP run infra-nats: succeeded']);
    expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(/#\d+ +DeploymentSucceeded$/);
    // Every event once, in order: none lost to the outage, none printed twice.
    const printed = [...r.stderr.matchAll(/^\d\d:\d\d:\d\d {2}#(\d+) +([A-Z][A-Za-z]+)/gm)].map(
      (m) => `${m[1]} ${m[2]}`,
    );
    expect(printed).toEqual(events.map((e) => `${e.version} ${e.type}`));
  }, 120_000);

  it('PostgreSQL stopped mid-run (the event log unreachable while tasks finish) - the run succeeds, every task once, none dispatched twice', async () => {
    await deployAndWaitForStep3('infra-pg', 2);
    const logBefore = stack.service('orchestrator').text.length;
    // Down for longer than step3 has left to run: its outcomes arrive while nothing can be recorded.
    await postgres.restart(4000);
    const events = await stack.waitForEnd('infra-pg');
    expectEveryTaskOnce('infra-pg', events);
    // The outage is said once per kind of failure, and its end once, not at every retry. The run
    // can end before a tick that began in the outage is over: the recovery lines come with the
    // next tick and the next results batch that work.
    const said = (msg: string) =>
      stack
        .service('orchestrator')
        .text.slice(logBefore)
        .split('\n')
        .filter((l) => l.includes(`"msg":"${msg}"`));
    await waitUntil(
      async () => said('ticks work again').length > 0 && said('task results are recorded again').length > 0,
      'a tick and a results batch to work again',
    );
    expect(said('tick failed; trying again every tick')).toHaveLength(1);
    expect(said('ticks work again')).toHaveLength(1);
    expect(said('could not record task results; they will be delivered again')).toHaveLength(1);
    expect(said('task results are recorded again')).toEqual([
      expect.stringMatching(/"runId":"infra-pg","failedAttempts":\d+,"failedForS":\d+,/),
    ]);
  }, 120_000);

  it('graph-planner away - the request is recorded at once, deploy waits for the plan (says so) and prints the run id once a planner is back', async () => {
    await stack.service('graph-planner').kill('SIGTERM');
    let exited = false;
    const deploying = stack.granule(['deploy', ...CHAIN, '--run-id', 'infra-planner']).finally(() => (exited = true));
    // Recorded while no planner could have planned it; the CLI waits for the plan, and says so.
    await waitUntil(async () => (await stack.events('infra-planner')).length > 0, 'the run to be recorded');
    expect((await stack.events('infra-planner')).map((e) => e.type)).toEqual(['DeploymentRequested']);
    await sleep(3000);
    expect(exited).toBe(false);
    await stack.service('graph-planner').start();
    const deployed = await deploying;
    stack.assertExitedOk(deployed, 'granule deploy infra-planner');
    expect([deployed.stdout, deployed.stderr]).toEqual([
      'infra-planner\n',
      expect.stringContaining('run infra-planner is recorded and waits for its plan (graph-planner)'),
    ]);
    expect((await stack.events('infra-planner')).map((e) => e.type)).toContain('PlanAccepted');
    const events = await stack.waitForEnd('infra-planner');
    expectEveryTaskOnce('infra-planner', events);
    expect(stack.service('orchestrator').text).toContain(
      '"msg":"no graph-planner answers yet (graph-planner did not answer on',
    );
  }, 120_000);
});
