import type { PlanReplyMessage, TaskDispatchMessage } from '@granule/contracts';
import { toExecutablePlan } from '@granule/deployment-run';
import type { ExecutablePlan } from '@granule/deployment-run';
import { buildPlan, planInstances } from '@granule/planner';
import { assertNoErrors, parseTaskFile } from '@granule/task-model';
import type { CoordinatorPorts } from './ports';
import { MemoryRunEventLog } from './testing/memory-run-event-log';
import { RunError } from '@granule/run-events';
import { RunCoordinator } from './run-coordinator';

const TASKS = `
- {id: a, type: shell, roles: '*', parameters: {cmd: a}}
- {id: b, type: shell, roles: '*', requires: [a], parameters: {cmd: b}}
`;

function world(log = new MemoryRunEventLog(), leases = new Set<string>()) {
  const built = buildPlan({
    tasks: assertNoErrors(parseTaskFile(TASKS, 'deployment_tasks.yaml')),
    nodes: [
      { uid: 'n1', roles: ['x'] },
      { uid: 'n2', roles: ['x'] },
    ],
  });
  const plan: ExecutablePlan = toExecutablePlan({
    instances: planInstances(built),
    groups: built.groups,
    concurrency: built.concurrency,
  });
  const dispatched: TaskDispatchMessage[] = [];
  const offline = new Set<string>();
  const warnings: string[] = [];
  /** While set, the dispatcher fails as a publish to an unreachable NATS does. */
  const nats = { down: false };
  let time = Date.parse('2026-01-01T00:00:00Z');
  const ports: CoordinatorPorts = {
    log,
    locks: log.lockLog,
    plans: {
      request: async (): Promise<PlanReplyMessage> => ({
        ok: true,
        result: { planId: 'p1', planHash: 'h1', instances: plan.size, tasks: 4, nodes: plan.nodeNames },
      }),
      load: async () => plan,
    },
    dispatcher: {
      dispatch: async (m) => {
        if (nats.down) throw new Error('TIMEOUT');
        dispatched.push(m);
      },
    },
    presence: { offline: async (nodes) => nodes.filter((n) => offline.has(n)) },
    lease: {
      acquire: async (id) => (leases.has(id) ? false : (leases.add(id), true)),
      renew: async (id) => leases.has(id),
      release: async (id) => void leases.delete(id),
    },
    clock: { now: () => new Date(time) },
    logger: { info: () => undefined, warn: (message) => void warnings.push(message), error: () => undefined },
  };
  const coordinator = new RunCoordinator(ports, { limits: { maxBusyNodes: 10 } });
  const plannerDown = (): void => {
    ports.plans.request = async () => {
      throw new RunError(
        'RUN_UNKNOWN',
        'graph-planner did not answer on p.planner.plan: start it with npm run start:graph-planner',
      );
    };
  };
  const succeed = (key: string, attempt = 1) =>
    coordinator.progress({
      runId: 'r1',
      key,
      node: key.split('@')[1],
      attempt,
      dispatchId: `r1/${key}/${attempt}`,
      status: 'succeeded',
      at: new Date(time).toISOString(),
      exitCode: 0,
    });
  const fail = (key: string, exitCode = 1) =>
    coordinator.progress({
      runId: 'r1',
      key,
      node: key.split('@')[1],
      attempt: 1,
      dispatchId: `r1/${key}/1`,
      status: 'failed',
      at: new Date(time).toISOString(),
      exitCode,
    });
  return {
    coordinator,
    ports,
    log,
    dispatched,
    offline,
    leases,
    nats,
    warnings,
    succeed,
    fail,
    plannerDown,
    advance: (s: number) => (time += s * 1000),
  };
}

const start = {
  commandId: 'c1',
  runId: 'r1',
  graph: 'default',
  dryRun: false,
  noop: false,
  inline: { graphs: {}, nodes: [] },
};

describe('RunCoordinator', () => {
  it('records before it dispatches and runs a plan to the end', async () => {
    const w = world();
    await w.coordinator.start(start);
    expect(w.dispatched.map((d) => d.dispatchId)).toEqual(['r1/a@n1/1', 'r1/a@n2/1']);
    const log = await w.log.read('r1');
    expect(log.map((e) => e.type)).toEqual(['DeploymentRequested', 'PlanAccepted', 'TaskDispatched', 'TaskDispatched']);
    await w.succeed('a@n1');
    await w.succeed('a@n2');
    await w.succeed('b@n1');
    await w.succeed('b@n2');
    expect((await w.log.read('r1')).at(-1)?.type).toBe('DeploymentSucceeded');
    expect(w.coordinator.owned()).toEqual([]);
    expect(w.leases.size).toBe(0);
  });

  it('ends the run refused, naming the reason, when no planner answers (instead of waiting forever)', async () => {
    const w = world();
    w.plannerDown();
    await w.coordinator.start(start);
    expect((await w.log.read('r1')).at(-1)).toEqual({
      type: 'DeploymentRefused',
      data: {
        code: 'RUN_UNKNOWN',
        reason: 'graph-planner did not answer on p.planner.plan: start it with npm run start:graph-planner',
      },
    });
    expect([w.coordinator.owned(), w.leases.size]).toEqual([[], 0]);
  });

  it('lets go of a run it records as expired: no lease, not driven, a stop is refused with RUN_ENDED', async () => {
    const w = world();
    const expiry = {
      commandId: 'c1',
      command: 'StartDeployment',
      storedAt: '2026-01-01T00:00:00.000Z',
      ttlSeconds: 60,
      expiredAt: '2026-01-01T00:02:00.000Z',
    };
    await w.coordinator.expire(start, expiry);
    expect((await w.log.read('r1')).map((e) => e.type)).toEqual(['DeploymentRequested', 'DeploymentExpired']);
    expect([w.coordinator.drives('r1'), w.coordinator.owned(), w.leases.size]).toEqual([false, [], 0]);
    await expect(w.coordinator.stop('r1')).rejects.toMatchObject({ code: 'RUN_ENDED' });
    await w.coordinator.tick();
    expect(await w.coordinator.recover()).toEqual([]);
    expect((await w.log.read('r1')).map((e) => e.type)).toEqual(['DeploymentRequested', 'DeploymentExpired']);
  });

  it('renewLeases - renews while a run waits on a slow NATS; the tick, behind that work, does not', async () => {
    const w = world();
    await w.coordinator.start(start);
    // Acks that take long: sending the dispatches a result allows holds the run's work.
    let acked: () => void = () => undefined;
    w.ports.dispatcher.dispatch = () => new Promise<void>((resolve) => (acked = resolve));
    const renewed: string[] = [];
    const renew = w.ports.lease.renew;
    w.ports.lease.renew = async (id) => (renewed.push(id), renew(id));
    const reported = w.succeed('a@n1');
    await new Promise((r) => setTimeout(r, 10));
    let ticked = false;
    const tick = w.coordinator.tick().then(() => (ticked = true));
    await w.coordinator.renewLeases();
    await new Promise((r) => setTimeout(r, 10));
    // The tick renewed once, then waits behind the run; renewLeases did not wait.
    expect(renewed).toEqual(['r1', 'r1']);
    expect(ticked).toBe(false);
    expect(w.coordinator.owned()).toEqual(['r1']);
    acked();
    await reported;
    await tick;
    expect(ticked).toBe(true);
  });

  it('stores a burst of results and the dispatches they allow in one append', async () => {
    const w = world();
    await w.coordinator.start(start);
    const before = w.log.appends.length;
    const ok = (key: string) => ({
      runId: 'r1',
      key,
      node: key.split('@')[1],
      attempt: 1,
      dispatchId: `r1/${key}/1`,
      status: 'succeeded' as const,
      at: new Date().toISOString(),
      exitCode: 0,
    });
    await w.coordinator.progressBatch([ok('a@n1'), ok('a@n2')]);
    expect(w.log.appends.slice(before)).toEqual([
      { runId: 'r1', types: ['TaskSucceeded', 'TaskSucceeded', 'TaskDispatched', 'TaskDispatched'] },
    ]);
    expect(w.dispatched.map((d) => d.key).sort()).toEqual(['a@n1', 'a@n2', 'b@n1', 'b@n2']);
  });

  it('keeps memory equal to the log when an append fails, so the same report can be applied again', async () => {
    const w = world();
    await w.coordinator.start(start);
    w.log.failNextAppend = true;
    await expect(w.succeed('a@n1')).rejects.toThrow('the database is gone');
    expect(w.coordinator.stateOf('r1')?.version).toBe((await w.log.read('r1')).length);
    await w.succeed('a@n1');
    expect((await w.log.read('r1')).filter((e) => e.type === 'TaskSucceeded')).toHaveLength(1);
    expect(w.dispatched.map((d) => d.key)).toContain('b@n1');
  });

  it('a dispatch NATS did not accept is recorded, not lost: the report is taken and the dispatch is sent again on the next ticks until it gets through', async () => {
    const w = world();
    await w.coordinator.start(start);
    w.nats.down = true;
    // The result is recorded (no error for the caller, so it is not delivered again) ...
    await w.succeed('a@n1');
    const log = await w.log.read('r1');
    expect(log.filter((e) => e.type === 'TaskDispatched').map((e) => e.data.key)).toEqual(['a@n1', 'a@n2', 'b@n1']);
    expect(w.dispatched.map((d) => d.key)).toEqual(['a@n1', 'a@n2']);
    expect(w.warnings).toEqual(['could not send dispatches; sending them again on every tick']);
    // ... ticks while NATS is down try again, and warn only once ...
    await w.coordinator.tick();
    await w.coordinator.tick();
    expect(w.warnings).toHaveLength(1);
    // ... and the first tick after NATS is back sends it, once, with the recorded dispatch id.
    w.nats.down = false;
    await w.coordinator.tick();
    await w.coordinator.tick();
    expect(w.dispatched.map((d) => d.dispatchId)).toEqual(['r1/a@n1/1', 'r1/a@n2/1', 'r1/b@n1/1']);
    await w.succeed('a@n2');
    await w.succeed('b@n1');
    await w.succeed('b@n2');
    expect((await w.log.read('r1')).at(-1)?.type).toBe('DeploymentSucceeded');
  });

  it('an unsent dispatch whose task was settled meanwhile (its node failed) is not sent any more', async () => {
    const w = world();
    await w.coordinator.start(start);
    w.nats.down = true;
    await w.succeed('a@n1');
    // n1 goes away: its pending dispatch b@n1 is settled by the health check, not sent later.
    w.offline.add('n1');
    await w.coordinator.tick();
    w.nats.down = false;
    await w.coordinator.tick();
    expect(w.dispatched.map((d) => d.key)).toEqual(['a@n1', 'a@n2']);
    expect((await w.log.read('r1')).map((e) => e.type)).toContain('NodeFailed');
  });

  it('with the database down, a report is refused until it can be recorded, however often it comes, and is then recorded once', async () => {
    const w = world();
    await w.coordinator.start(start);
    w.log.down = true;
    // Neither the append nor the fold from the log works: memory must not keep what was decided.
    await expect(w.succeed('a@n1')).rejects.toThrow('ECONNREFUSED');
    await expect(w.succeed('a@n1')).rejects.toThrow('ECONNREFUSED');
    await expect(w.coordinator.tick()).rejects.toThrow('ECONNREFUSED');
    w.log.down = false;
    await w.succeed('a@n1');
    const log = await w.log.read('r1');
    expect(log.filter((e) => e.type === 'TaskSucceeded').map((e) => e.data.key)).toEqual(['a@n1']);
    expect(w.dispatched.map((d) => d.key)).toEqual(['a@n1', 'a@n2', 'b@n1']);
    expect(w.coordinator.stateOf('r1')?.version).toBe(log.length);
  });

  it('a start is accepted once its request is recorded: a planner that takes its time holds up neither the answer nor the ticks', async () => {
    const w = world();
    let answer: (reply: PlanReplyMessage) => void = () => undefined;
    const original = w.ports.plans.request;
    w.ports.plans.request = (req) => new Promise((resolve) => (answer = resolve)).then(() => original(req));
    const { planned } = await w.coordinator.accept(start);
    expect((await w.log.read('r1')).map((e) => e.type)).toEqual(['DeploymentRequested']);
    await w.coordinator.tick(); // does not wait for the plan
    expect(w.dispatched).toEqual([]);
    answer({} as PlanReplyMessage);
    await planned;
    expect((await w.log.read('r1')).map((e) => e.type)).toEqual([
      'DeploymentRequested',
      'PlanAccepted',
      'TaskDispatched',
      'TaskDispatched',
    ]);
  });

  it('a plan whose acceptance could not be recorded is asked for again on the next tick', async () => {
    const w = world();
    const { planned } = await w.coordinator.accept(start);
    // The append of PlanAccepted fails (the request itself is already recorded).
    w.log.failNextAppend = true;
    await expect(planned).rejects.toThrow('the database is gone');
    expect((await w.log.read('r1')).map((e) => e.type)).toEqual(['DeploymentRequested']);
    await w.coordinator.tick();
    for (let k = 0; k < 50 && w.dispatched.length === 0; k++) await new Promise((r) => setImmediate(r));
    expect((await w.log.read('r1')).map((e) => e.type)).toEqual([
      'DeploymentRequested',
      'PlanAccepted',
      'TaskDispatched',
      'TaskDispatched',
    ]);
  });

  it("stop and resume name what is wrong with a run it cannot act on: unknown, ended, or another orchestrator's", async () => {
    const w = world();
    await expect(w.coordinator.stop('nope')).rejects.toThrow(
      'run nope does not exist (granule runs list shows the runs)',
    );
    await w.coordinator.start(start);
    for (const key of ['a@n1', 'a@n2', 'b@n1', 'b@n2']) await w.succeed(key);
    await expect(w.coordinator.stop('r1')).rejects.toThrow(
      'run r1 has ended (DeploymentSucceeded): there is nothing to stop',
    );
    await expect(w.coordinator.resume('r1')).rejects.toThrow(
      'run r1 has ended (DeploymentSucceeded): there is nothing to resume (only a stopped run can be resumed)',
    );
    // Open, but driven elsewhere (its lease is held by another orchestrator).
    await w.log.append(
      'r2',
      [{ type: 'DeploymentRequested', data: { runId: 'r2', graph: 'default', dryRun: false, noop: false } as never }],
      0,
    );
    await expect(w.coordinator.stop('r2')).rejects.toThrow('run r2 is driven by another orchestrator');
  });

  it('a failed run names retry as the way on', async () => {
    const w = world();
    await w.coordinator.start(start);
    await w.fail('a@n1');
    await w.succeed('a@n2');
    expect((await w.log.read('r1')).at(-1)?.type).toBe('DeploymentFailed');
    await expect(w.coordinator.stop('r1')).rejects.toThrow(
      'run r1 has ended (DeploymentFailed): there is nothing to stop; granule retry r1 reruns its failed tasks in a new run',
    );
  });

  it('a stopped run names resume as the way on, not a retry of failures it has none of', async () => {
    const w = world();
    await w.coordinator.start(start);
    await w.coordinator.stop('r1');
    await w.succeed('a@n1');
    await w.succeed('a@n2');
    expect((await w.log.read('r1')).at(-1)?.type).toBe('DeploymentStopped');
    await expect(w.coordinator.stop('r1')).rejects.toThrow(
      'run r1 has ended (DeploymentStopped): there is nothing to stop; granule resume r1 goes on where it stopped (granule retry r1 --all-unfinished runs the rest in a new run)',
    );
  });

  it('refuses a run id that was used before', async () => {
    const w = world();
    await w.coordinator.start(start);
    await expect(w.coordinator.start(start)).rejects.toThrow('run r1 already exists');
  });

  it('after a crash, rebuilds the run from the log, re-sends unanswered dispatches with the same id and runs no finished task again', async () => {
    const first = world();
    await first.coordinator.start(start);
    await first.succeed('a@n1'); // b@n1 gets dispatched
    // The orchestrator dies; its lease lapses; a new one starts with the same event log.
    const second = world(first.log);
    expect(await second.coordinator.recover()).toEqual(['r1']);
    expect(second.dispatched.map((d) => d.dispatchId).sort()).toEqual(['r1/a@n2/1', 'r1/b@n1/1']);
    await second.succeed('a@n2');
    await second.succeed('b@n1');
    await second.succeed('b@n2');
    const log = await second.log.read('r1');
    expect(log.at(-1)?.type).toBe('DeploymentSucceeded');
    const dispatchedKeys = log.flatMap((e) => (e.type === 'TaskDispatched' ? [e.data.key] : []));
    expect(dispatchedKeys.sort()).toEqual(['a@n1', 'a@n2', 'b@n1', 'b@n2']);
  });

  it('inputs the CLI stored - the planner gets their reference; planning a crash interrupted is asked again, where inline inputs are refused', async () => {
    const inputs = { name: 'f'.repeat(64), size: 123_456 };
    const { inline: _inline, ...withoutInline } = start;
    const first = world();
    const asked: unknown[] = [];
    // The orchestrator dies while graph-planner is still planning.
    first.ports.plans.request = (request) => (asked.push(request), new Promise(() => undefined));
    void first.coordinator.accept({ ...withoutInline, inputs });
    void first.coordinator.accept({ ...start, runId: 'r2' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(asked).toEqual([
      expect.objectContaining({ runId: 'r1', inputs }),
      expect.objectContaining({ runId: 'r2', inline: start.inline }),
    ]);
    expect((await first.log.read('r1'))[0]).toEqual({
      type: 'DeploymentRequested',
      data: expect.objectContaining({ runId: 'r1', inputs }),
    });
    const second = world(first.log);
    const again: unknown[] = [];
    const answer = second.ports.plans.request;
    second.ports.plans.request = (request) => (again.push(request), answer(request));
    await second.coordinator.recover();
    await new Promise((resolve) => setImmediate(resolve));
    expect(again).toEqual([expect.objectContaining({ runId: 'r1', inputs, graph: 'default' })]);
    expect((await second.log.read('r1')).map((e) => e.type)).toContain('PlanAccepted');
    expect((await second.log.read('r2')).at(-1)).toEqual({
      type: 'DeploymentRefused',
      data: expect.objectContaining({ code: 'PLANNING_INTERRUPTED' }),
    });
  });

  it('does not take a run whose lease another orchestrator holds', async () => {
    const first = world();
    await first.coordinator.start(start);
    const second = world(first.log, first.leases);
    first.log.reads.length = 0;
    expect(await second.coordinator.recover()).toEqual([]);
    // Asked on every tick: a run driven elsewhere costs a lease attempt, not a read of its stream.
    expect(first.log.reads).toEqual([]);
  });

  it('gives the lease back when the run ended between the listing and the lease', async () => {
    const first = world();
    await first.coordinator.start(start);
    const second = world(first.log);
    // The driver ends the run right after the second orchestrator listed it as open.
    const listed = await first.log.openRuns();
    first.log.openRuns = async () => listed;
    await first.succeed('a@n1');
    await first.succeed('a@n2');
    await first.succeed('b@n1');
    await first.succeed('b@n2');
    first.leases.clear();
    expect((await first.log.read('r1')).at(-1)?.type).toBe('DeploymentSucceeded');
    expect(await second.coordinator.recover()).toEqual([]);
    expect([second.coordinator.owned(), second.leases.size]).toEqual([[], 0]);
  });

  it('retries only the failed and dep_failed task instances in a new run', async () => {
    const w = world();
    await w.coordinator.start(start);
    await w.succeed('a@n1');
    await w.fail('a@n2');
    await w.succeed('b@n1');
    expect((await w.log.read('r1')).at(-1)?.type).toBe('DeploymentFailed');
    w.dispatched.length = 0;
    await w.coordinator.retry({ commandId: 'c2', runId: 'r1', newRunId: 'r2', failedOnly: true });
    const accepted = (await w.log.read('r2')).find((e) => e.type === 'PlanAccepted');
    expect(accepted?.type === 'PlanAccepted' && accepted.data.only).toEqual(['a@n2', 'b@n2']);
    expect(w.dispatched.map((d) => d.dispatchId)).toEqual(['r2/a@n2/1']);
  });

  it('refuses to retry a run that succeeded, and records no run', async () => {
    const w = world();
    await w.coordinator.start(start);
    for (const key of ['a@n1', 'a@n2', 'b@n1', 'b@n2']) await w.succeed(key);
    expect((await w.log.read('r1')).at(-1)?.type).toBe('DeploymentSucceeded');
    for (const failedOnly of [true, false])
      await expect(w.coordinator.retry({ commandId: 'c2', runId: 'r1', newRunId: 'r2', failedOnly })).rejects.toThrow(
        'run r1 has nothing to retry: every task instance succeeded or was skipped',
      );
    expect(await w.log.read('r2')).toEqual([]);
  });

  it('a stopped run with nothing failed: retry names --all-unfinished for the tasks left pending', async () => {
    const w = world();
    await w.coordinator.start(start);
    await w.succeed('a@n1');
    await w.coordinator.stop('r1');
    await w.succeed('b@n1');
    await w.succeed('a@n2');
    expect((await w.log.read('r1')).at(-1)?.type).toBe('DeploymentStopped');
    await expect(
      w.coordinator.retry({ commandId: 'c2', runId: 'r1', newRunId: 'r2', failedOnly: true }),
    ).rejects.toThrow('run r1 has no failed task instance to retry; --all-unfinished reruns the 1 that did not run');
    await w.coordinator.retry({ commandId: 'c3', runId: 'r1', newRunId: 'r3', failedOnly: false });
    const accepted = (await w.log.read('r3')).find((e) => e.type === 'PlanAccepted');
    expect(accepted?.type === 'PlanAccepted' && accepted.data.only).toEqual(['b@n2']);
  });

  it("a task's budget runs from when NATS took its dispatch, not from the record, and not while it is unsent", async () => {
    // Shell defaults: 300 s x 3 tries + 2 pauses of 2 s + 30 s of grace = 934 s.
    const w = world();
    w.nats.down = true;
    await w.coordinator.start(start);
    w.advance(2000);
    await w.coordinator.tick();
    const types = async () => (await w.log.read('r1')).map((e) => e.type);
    expect(await types()).not.toContain('TaskTimedOut');
    w.nats.down = false;
    await w.coordinator.tick(); // sent now, 2,000 s after they were recorded
    expect(w.dispatched.map((d) => d.key)).toEqual(['a@n1', 'a@n2']);
    w.advance(930);
    await w.coordinator.tick();
    expect(await types()).not.toContain('TaskTimedOut');
    w.advance(5);
    await w.coordinator.tick();
    expect((await types()).filter((t) => t === 'TaskTimedOut')).toHaveLength(2);
  });

  it('fails the running task of a node whose agent disappears, on the next tick', async () => {
    const w = world();
    await w.coordinator.start(start);
    w.offline.add('n2');
    await w.coordinator.tick();
    const types = (await w.log.read('r1')).map((e) => e.type);
    expect(types.slice(-3)).toEqual(['TaskFailed', 'NodeFailed', 'DeploymentStopRequested']);
  });

  describe('node statuses (NodeStatusChanged on the node streams, appended with the run events)', () => {
    const statuses = (log: MemoryRunEventLog, uid: string) =>
      (log.nodeStreams.get(uid) ?? []).map((e) => [e.data.from ?? null, e.data.to, e.data.runId]);

    it('a check run (ADR 0031) - its dispatches are checks and noop, it takes the nodes, and says nothing of their status', async () => {
      const w = world();
      await w.coordinator.start({ ...start, check: true, diff: true });
      expect(w.dispatched.map((d) => [d.dispatchId, d.noop, d.check, d.diff])).toEqual([
        ['r1/a@n1/1', true, true, true],
        ['r1/a@n2/1', true, true, true],
      ]);
      expect((await w.log.read('r1'))[0]).toMatchObject({ data: { check: true, diff: true, noop: false } });
      for (const key of ['a@n1', 'a@n2', 'b@n1', 'b@n2']) await w.succeed(key);
      expect((await w.log.read('r1')).at(-1)?.type).toBe('DeploymentSucceeded');
      expect([statuses(w.log, 'n1'), statuses(w.log, 'n2')]).toEqual([[], []]);
      expect(w.log.lockStreams.get('n1')?.map((e) => `${e.type} ${e.data.runId}`)).toEqual([
        'NodeLocked r1',
        'NodeReleased r1',
      ]);
    });

    it('a noop run (Fuel --noop) - it takes the nodes, and a task that fails in it marks no node error', async () => {
      const w = world();
      await w.coordinator.start({ ...start, noop: true });
      expect(w.dispatched.map((d) => [d.dispatchId, d.noop])).toEqual([
        ['r1/a@n1/1', true],
        ['r1/a@n2/1', true],
      ]);
      await w.succeed('a@n1');
      await w.succeed('b@n1');
      await w.fail('a@n2', 3);
      expect((await w.log.read('r1')).at(-1)?.type).toBe('DeploymentFailed');
      expect([statuses(w.log, 'n1'), statuses(w.log, 'n2')]).toEqual([[], []]);
      expect(w.log.lockStreams.get('n2')?.map((e) => `${e.type} ${e.data.runId}`)).toEqual([
        'NodeLocked r1',
        'NodeReleased r1',
      ]);
    });

    it("deploying at a node's first dispatch, ready once its work is done, error when it fails; nothing repeated", async () => {
      const w = world();
      await w.coordinator.start(start);
      expect([statuses(w.log, 'n1'), statuses(w.log, 'n2')]).toEqual([
        [[null, 'deploying', 'r1']],
        [[null, 'deploying', 'r1']],
      ]);
      // One append carries the accepted plan, its first dispatches and the statuses: never one without the other.
      expect(w.log.appends.at(-1)?.types).toEqual(['PlanAccepted', 'TaskDispatched', 'TaskDispatched']);
      await w.succeed('a@n1');
      await w.succeed('b@n1');
      expect(statuses(w.log, 'n1')).toEqual([
        [null, 'deploying', 'r1'],
        ['deploying', 'ready', 'r1'],
      ]);
      await w.fail('a@n2', 3);
      expect((await w.log.read('r1')).at(-1)?.type).toBe('DeploymentFailed');
      expect(statuses(w.log, 'n2')).toEqual([
        [null, 'deploying', 'r1'],
        ['deploying', 'error', 'r1'],
      ]);
      expect(statuses(w.log, 'n1')).toHaveLength(2); // still ready, not said again at the end
    });

    it('a recovered run goes on from what it said before, and a run that ends early leaves its unfinished nodes stopped', async () => {
      const first = world();
      await first.coordinator.start(start);
      await first.succeed('a@n1');
      const second = world(first.log);
      await second.coordinator.recover();
      await second.coordinator.stop('r1');
      await second.succeed('b@n1');
      await second.succeed('a@n2');
      expect((await second.log.read('r1')).at(-1)?.type).toBe('DeploymentStopped');
      expect(statuses(second.log, 'n1')).toEqual([
        [null, 'deploying', 'r1'],
        ['deploying', 'ready', 'r1'],
      ]);
      // n2's b never ran: the run stopped first.
      expect(statuses(second.log, 'n2')).toEqual([
        [null, 'deploying', 'r1'],
        ['deploying', 'stopped', 'r1'],
      ]);
    });
  });
});

describe('RunCoordinator - node locks (ADR 0024)', () => {
  const types = async (log: MemoryRunEventLog, runId: string) => (await log.read(runId)).map((e) => e.type);

  it('a second deploy of the same nodes - refused naming the first, which goes on alone', async () => {
    const w = world();
    await w.coordinator.start(start);
    await w.coordinator.start({ ...start, commandId: 'c2', runId: 'r2' });
    const r2 = await w.log.read('r2');
    expect(r2.map((e) => e.type)).toEqual(['DeploymentRequested', 'DeploymentRefused']);
    expect(r2[1]).toMatchObject({ data: { code: 'NODES_LOCKED', reason: expect.stringContaining('n1, n2 (run r1)') } });
    expect(w.dispatched.every((d) => d.runId === 'r1')).toBe(true);
    expect(w.log.lockStreams.get('n1')?.map((e) => `${e.type} ${e.data.runId}`)).toEqual(['NodeLocked r1']);
  });

  it('the loser of a race - decides again on what the winner recorded and is refused, not failed', async () => {
    const w = world();
    // r2 reads the locks first and sees the nodes free; r1 takes them before r2 appends.
    const read = w.ports.locks.read;
    let raced = false;
    w.ports.locks.read = async (uids) => {
      const view = await read(uids);
      if (!raced) {
        raced = true;
        await w.coordinator.start(start);
      }
      return view;
    };
    await w.coordinator.start({ ...start, commandId: 'c2', runId: 'r2' });
    expect(await types(w.log, 'r2')).toEqual(['DeploymentRequested', 'DeploymentRefused']);
    expect(w.log.lockStreams.get('n2')?.map((e) => e.data.runId)).toEqual(['r1']);
  });

  it('--wait - queued behind the holder, started by a tick once the holder ended and released its nodes', async () => {
    const w = world();
    await w.coordinator.start(start);
    await w.coordinator.start({ ...start, commandId: 'c2', runId: 'r2', waitForLocks: true });
    expect(await types(w.log, 'r2')).toEqual(['DeploymentRequested', 'DeploymentQueued']);
    await w.coordinator.tick();
    expect(await types(w.log, 'r2')).toEqual(['DeploymentRequested', 'DeploymentQueued']);
    for (const key of ['a@n1', 'a@n2', 'b@n1', 'b@n2']) await w.succeed(key);
    expect((await types(w.log, 'r1')).at(-1)).toBe('DeploymentSucceeded');
    expect(w.log.lockStreams.get('n1')?.map((e) => e.type)).toEqual(['NodeLocked', 'NodeReleased']);
    await w.coordinator.tick();
    expect(await types(w.log, 'r2')).toEqual([
      'DeploymentRequested',
      'DeploymentQueued',
      'PlanAccepted',
      'TaskDispatched',
      'TaskDispatched',
    ]);
    expect(w.log.lockStreams.get('n1')?.map((e) => `${e.type} ${e.data.runId}`)).toEqual([
      'NodeLocked r1',
      'NodeReleased r1',
      'NodeLocked r2',
    ]);
  });

  it('a queued run - is taken up by another orchestrator from the log and still starts after the holder', async () => {
    const w = world();
    await w.coordinator.start(start);
    await w.coordinator.start({ ...start, commandId: 'c2', runId: 'r2', waitForLocks: true });
    // The orchestrator is gone; the holder stops; another one (same log, leases lapsed) recovers.
    w.leases.clear();
    const other = world(w.log);
    expect((await other.coordinator.recover()).sort()).toEqual(['r1', 'r2']);
    await other.coordinator.stop('r1');
    for (const key of ['a@n1', 'a@n2']) await other.succeed(key);
    expect((await types(w.log, 'r1')).at(-1)).toBe('DeploymentStopped');
    await other.coordinator.tick();
    expect((await types(w.log, 'r2')).slice(2, 3)).toEqual(['PlanAccepted']);
  });

  it('resume of a stopped run whose nodes another run took - refused naming it, let go, queued with --wait', async () => {
    const w = world();
    await w.coordinator.start(start);
    await w.coordinator.stop('r1');
    for (const key of ['a@n1', 'a@n2']) await w.succeed(key);
    expect((await types(w.log, 'r1')).at(-1)).toBe('DeploymentStopped');
    await w.coordinator.start({ ...start, commandId: 'c2', runId: 'r2' });
    await expect(w.coordinator.resume('r1')).rejects.toMatchObject({
      code: 'NODES_LOCKED',
      message: expect.stringContaining('(run r2)'),
    });
    expect(w.coordinator.drives('r1')).toBe(false);
    await w.coordinator.resume('r1', undefined, true, 'alice');
    expect((await types(w.log, 'r1')).at(-1)).toBe('DeploymentQueued');
    await w.coordinator.stop('r2');
    await w.coordinator.tick();
    expect(await types(w.log, 'r1')).not.toContain('DeploymentResumed');
    for (const key of ['a@n1', 'a@n2'])
      await w.coordinator.progress({
        runId: 'r2',
        key,
        node: key.split('@')[1],
        attempt: 1,
        dispatchId: `r2/${key}/1`,
        status: 'succeeded',
        at: '2026-01-01T00:00:01Z',
        exitCode: 0,
      });
    expect((await types(w.log, 'r2')).at(-1)).toBe('DeploymentStopped');
    await w.coordinator.tick();
    expect((await types(w.log, 'r1')).slice(-3)).toEqual(['DeploymentResumed', 'TaskDispatched', 'TaskDispatched']);
    // Resumed when the nodes came free, in the name of the operator who asked for it.
    expect((await w.log.read('r1')).find((e) => e.type === 'DeploymentResumed')?.data).toMatchObject({
      requestedBy: 'alice',
    });
  });

  it('a queued run stopped - ends stopped and says nothing of the nodes the holder is deploying', async () => {
    const w = world();
    await w.coordinator.start(start);
    await w.coordinator.start({ ...start, commandId: 'c2', runId: 'r2', waitForLocks: true });
    await w.coordinator.stop('r2');
    expect(await types(w.log, 'r2')).toEqual([
      'DeploymentRequested',
      'DeploymentQueued',
      'DeploymentStopRequested',
      'DeploymentStopped',
    ]);
    expect([...w.log.nodeStreams.values()].flat().every((e) => e.data.runId === 'r1')).toBe(true);
    expect(w.log.lockStreams.get('n1')?.map((e) => e.data.runId)).toEqual(['r1']);
  });

  it('a run planned before locks existed, taken up after the upgrade - releases no node when it ends', async () => {
    const w = world();
    await w.coordinator.start(start);
    // As if recorded before locks: no lock stream; a newer run holds n1 meanwhile.
    w.log.lockStreams.clear();
    w.log.lockStreams.set('n1', [{ type: 'NodeLocked', data: { uid: 'n1', runId: 'newer', at: 't' } }]);
    w.leases.clear();
    const other = world(w.log);
    await other.coordinator.recover();
    for (const key of ['a@n1', 'a@n2', 'b@n1', 'b@n2']) await other.succeed(key);
    expect((await types(w.log, 'r1')).at(-1)).toBe('DeploymentSucceeded');
    expect(w.log.lockStreams.get('n1')?.map((e) => `${e.type} ${e.data.runId}`)).toEqual(['NodeLocked newer']);
    expect(w.log.lockStreams.has('n2')).toBe(false);
  });

  it('a retry - takes only the nodes of the instances it reruns', async () => {
    const w = world();
    await w.coordinator.start(start);
    await w.coordinator.stop('r1');
    for (const key of ['a@n1', 'a@n2']) await w.succeed(key);
    await w.coordinator.retry({ commandId: 'c3', runId: 'r1', newRunId: 'r3', failedOnly: false });
    expect((await types(w.log, 'r3')).slice(0, 2)).toEqual(['DeploymentRequested', 'PlanAccepted']);
    expect(w.log.lockStreams.get('n1')?.at(-1)).toMatchObject({ type: 'NodeLocked', data: { runId: 'r3' } });
  });
});
