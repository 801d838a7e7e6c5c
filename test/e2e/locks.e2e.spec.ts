import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { E2eStack, FIXTURES, dataOf, waitUntil, type StoredEvent } from './stack';

// Node locks (ADR 0024) on four agents of one environment. A deploy that needs a node another
// running deploy holds is refused naming the holder, or queued with --wait; deploys of disjoint
// nodes run side by side; a run gives its nodes back when it fails or is stopped; the locks are
// in the event log, so they outlive the orchestrator that took them. A run is kept on its nodes
// by a hold file (`fixtures/locks`): no test depends on how fast a busy machine is.
const LOCKS = ['--tasks', path.join(FIXTURES, 'locks/tasks.yaml'), '--nodes', path.join(FIXTURES, 'groups/nodes.yaml')];
const STEPS = ['prepare', 'configure'];

const typesOf = (events: StoredEvent[]): string[] => events.map((e) => e.type);
const first = (events: StoredEvent[], type: string): StoredEvent => events.find((e) => e.type === type) as StoredEvent;
const last = (events: StoredEvent[]): StoredEvent => events[events.length - 1];

describe('node locks: concurrent deploys of one environment (whole stack)', () => {
  let stack: E2eStack;

  beforeAll(async () => {
    stack = await E2eStack.start({ name: 'locks', agents: ['1', '2', '3', '4'] });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  }, 60_000);

  afterEach(() => {
    rmSync(path.join(stack.dir, 'hold'), { recursive: true, force: true });
    stack.setFailing('prepare@1', false);
  });

  /** Keeps run `runId`'s tasks waiting (and so the run on its nodes) until `release(runId)`. */
  function hold(runId: string): void {
    mkdirSync(path.join(stack.dir, 'hold'), { recursive: true });
    writeFileSync(path.join(stack.dir, 'hold', runId), '');
  }
  function release(runId: string): void {
    rmSync(path.join(stack.dir, 'hold', runId), { force: true });
  }

  /** The last event of a node's lock stream, straight from PostgreSQL. */
  async function lockOf(uid: string): Promise<{ type: string; runId: string } | undefined> {
    const rows: { type: string; data: { runId: string } }[] = await stack.dataSource.query(
      `SELECT type, data FROM granule_events WHERE stream_id = $1 ORDER BY stream_version DESC LIMIT 1`,
      [`lock-${uid}`],
    );
    return rows[0] ? { type: rows[0].type, runId: rows[0].data.runId } : undefined;
  }

  it('a second deploy while the first runs - refused naming the first and how to wait or stop it; nothing of it runs', async () => {
    hold('hold-1');
    const holder = stack.granule(['deploy', ...LOCKS, '--run-id', 'hold-1', '--watch']);
    await stack.waitForEvent('hold-1', 'PlanAccepted');
    const r = await stack.granule(['deploy', ...LOCKS, '--run-id', 'second-1']);
    release('hold-1');
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('second-1\n');
    expect(r.stderr).toContain(
      "error: run second-1 was refused: nodes held by a running deployment: 1, 2, 3, 4 (run hold-1); wait for it with 'granule deploy --wait ...' (queued, starts when the nodes are free), or stop it with 'granule stop hold-1'",
    );
    const refused = await stack.events('second-1');
    expect(typesOf(refused)).toEqual(['DeploymentRequested', 'DeploymentRefused']);
    expect(dataOf(refused[1], 'DeploymentRefused').code).toBe('NODES_LOCKED');
    stack.assertExitedOk(await holder, 'the holding deploy');
    expect(stack.ledger('second-1')).toEqual([]);
    // The holder gave its nodes back when it ended.
    expect(await lockOf('1')).toEqual({ type: 'NodeReleased', runId: 'hold-1' });
  }, 90_000);

  it('deploy --wait while another runs - queued naming the holder, starts once it ended; the two never interleave', async () => {
    hold('hold-2');
    const holder = stack.granule(['deploy', ...LOCKS, '--run-id', 'hold-2', '--watch']);
    await stack.waitForEvent('hold-2', 'PlanAccepted');
    const waiting = stack.granule(['deploy', ...LOCKS, '--run-id', 'queued-2', '--wait', '--watch']);
    await stack.waitForEvent('queued-2', 'DeploymentQueued');
    release('hold-2');
    const waiter = await waiting;
    stack.assertExitedOk(waiter, 'deploy --wait');
    expect(waiter.stderr).toMatch(
      /#2 +DeploymentQueued +waits for nodes held by 1, 2, 3, 4 \(run hold-2\); goes on when they are free$/m,
    );
    expect(waiter.stdout.split('\n')[0]).toBe('RECAP run queued-2: succeeded');
    stack.assertExitedOk(await holder, 'the holding deploy');
    const held = await stack.events('hold-2');
    const queued = await stack.events('queued-2');
    expect(typesOf(queued).slice(0, 3)).toEqual(['DeploymentRequested', 'DeploymentQueued', 'PlanAccepted']);
    // Its first dispatch came after the holder's end, and every one of its tasks began after every
    // one of the holder's (the ledger is appended in the order the tasks began).
    expect(first(queued, 'TaskDispatched').at.getTime()).toBeGreaterThanOrEqual(last(held).at.getTime());
    const ledger = stack.ledger().filter((l) => /^(hold-2|queued-2) /.test(l));
    expect(ledger.map((l) => l.split(' ')[0])).toEqual([...Array(8).fill('hold-2'), ...Array(8).fill('queued-2')]);
  }, 90_000);

  it('two deploys of disjoint nodes of the environment - both run at the same time', async () => {
    hold('part-a');
    hold('part-b');
    const a = stack.granule(['deploy', ...LOCKS, '--node', '1,2', '--run-id', 'part-a', '--watch']);
    const b = stack.granule(['deploy', ...LOCKS, '--node', '3,4', '--run-id', 'part-b', '--watch']);
    // Each has a task running while the other's is held running too.
    await stack.waitForEvent('part-a', 'TaskStarted');
    await stack.waitForEvent('part-b', 'TaskStarted');
    release('part-a');
    release('part-b');
    stack.assertExitedOk(await a, 'deploy --node 1,2');
    stack.assertExitedOk(await b, 'deploy --node 3,4');
    const ea = await stack.events('part-a');
    const eb = await stack.events('part-b');
    expect(typesOf(ea)).not.toContain('DeploymentQueued');
    expect(typesOf(eb)).not.toContain('DeploymentQueued');
    expect(stack.ledger('part-a').sort()).toEqual(STEPS.flatMap((s) => [`${s}@1`, `${s}@2`]).sort());
    expect(stack.ledger('part-b').sort()).toEqual(STEPS.flatMap((s) => [`${s}@3`, `${s}@4`]).sort());
    expect(await lockOf('1')).toEqual({ type: 'NodeReleased', runId: 'part-a' });
    expect(await lockOf('4')).toEqual({ type: 'NodeReleased', runId: 'part-b' });
  }, 90_000);

  it('a run that failed - gave its nodes back: the next deploy is not refused', async () => {
    stack.setFailing('prepare@1');
    const failed = await stack.granule(['deploy', ...LOCKS, '--run-id', 'fails-4', '--watch']);
    expect(failed.code).toBe(1);
    expect(last(await stack.events('fails-4')).type).toBe('DeploymentFailed');
    expect(await lockOf('1')).toEqual({ type: 'NodeReleased', runId: 'fails-4' });
    stack.setFailing('prepare@1', false);
    stack.assertExitedOk(
      await stack.granule(['deploy', ...LOCKS, '--run-id', 'after-fail-4', '--watch']),
      'a deploy after a failed one',
    );
  }, 90_000);

  it('a run stopped with granule stop - gave its nodes back; its resume is refused while another run holds them, queued with --wait', async () => {
    hold('stop-5');
    const stopping = stack.granule(['deploy', ...LOCKS, '--run-id', 'stop-5', '--watch']);
    await stack.waitForEvent('stop-5', 'TaskStarted');
    stack.assertExitedOk(await stack.granule(['stop', 'stop-5']), 'granule stop');
    release('stop-5');
    await stopping;
    expect(last(await stack.waitForEnd('stop-5')).type).toBe('DeploymentStopped');
    expect(await lockOf('1')).toEqual({ type: 'NodeReleased', runId: 'stop-5' });
    // The next deploy is not refused: it takes the nodes.
    hold('after-stop-5');
    const next = stack.granule(['deploy', ...LOCKS, '--run-id', 'after-stop-5', '--watch']);
    await stack.waitForEvent('after-stop-5', 'PlanAccepted');
    const refused = await stack.granule(['resume', 'stop-5']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      'run stop-5 cannot resume: nodes held by a running deployment: 1, 2, 3, 4 (run after-stop-5)',
    );
    expect(refused.stderr).toContain('granule resume --wait ...');
    const queued = await stack.granule(['resume', 'stop-5', '--wait']);
    stack.assertExitedOk(queued, 'granule resume --wait');
    expect(queued.stdout).toBe(
      'queued stop-5: waits for nodes held by 1, 2, 3, 4 (run after-stop-5); goes on when they are free\n',
    );
    release('after-stop-5');
    stack.assertExitedOk(await next, 'a deploy after a stopped one');
    const resumed = await stack.waitForEnd('stop-5');
    expect(last(resumed).type).toBe('DeploymentSucceeded');
    expect(first(resumed, 'DeploymentResumed').at.getTime()).toBeGreaterThanOrEqual(
      last(await stack.events('after-stop-5')).at.getTime(),
    );
  }, 90_000);

  it('the orchestrator SIGKILLed and started again mid-run - the locks hold: a deploy is still refused naming the run, a queued one waits', async () => {
    hold('hold-6');
    const holder = stack.granule(['deploy', ...LOCKS, '--run-id', 'hold-6', '--watch']);
    await stack.waitForEvent('hold-6', 'TaskStarted');
    await stack.service('orchestrator').kill('SIGKILL');
    await stack.service('orchestrator').start();
    const r = await stack.granule(['deploy', ...LOCKS, '--run-id', 'second-6']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('nodes held by a running deployment: 1, 2, 3, 4 (run hold-6)');
    // A queued one survives a restart too, and runs once the holder ended.
    const waiter = stack.granule(['deploy', ...LOCKS, '--run-id', 'queued-6', '--wait', '--watch']);
    await stack.waitForEvent('queued-6', 'DeploymentQueued');
    await stack.service('orchestrator').kill('SIGKILL');
    await stack.service('orchestrator').start();
    release('hold-6');
    stack.assertExitedOk(await holder, 'the holding deploy');
    stack.assertExitedOk(await waiter, 'the queued deploy');
    const held = await stack.events('hold-6');
    const queued = await stack.events('queued-6');
    expect(last(queued).type).toBe('DeploymentSucceeded');
    expect(first(queued, 'PlanAccepted').at.getTime()).toBeGreaterThanOrEqual(last(held).at.getTime());
  }, 120_000);

  it('two replicas, the one driving the holder SIGKILLed for good - the survivor keeps its lock: refused, queued, then run after it', async () => {
    await stack.service('orchestrator-2').start();
    hold('hold-7');
    const holder = stack.granule(['deploy', ...LOCKS, '--run-id', 'hold-7', '--watch']);
    await stack.waitForEvent('hold-7', 'TaskStarted');
    const waiter = stack.granule(['deploy', ...LOCKS, '--run-id', 'queued-7', '--wait', '--watch']);
    await stack.waitForEvent('queued-7', 'DeploymentQueued');
    const lease = await stack.redisClient().get(`${stack.prefix}:lease:run:hold-7`);
    const driver = lease?.startsWith('orchestrator-2#') ? 'orchestrator-2' : 'orchestrator';
    await stack.service(driver).kill('SIGKILL');
    const r = await stack.granule(['deploy', ...LOCKS, '--run-id', 'second-7']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('nodes held by a running deployment: 1, 2, 3, 4 (run hold-7)');
    // The survivor takes the holder over once its lease lapsed, and drives it to its end.
    const survivor = driver === 'orchestrator' ? 'orchestrator-2' : 'orchestrator';
    await waitUntil(
      async () => (await stack.redisClient().get(`${stack.prefix}:lease:run:hold-7`))?.startsWith(`${survivor}#`),
      'the surviving replica to take the holder over',
      30_000,
    );
    release('hold-7');
    stack.assertExitedOk(await holder, 'the holding deploy');
    stack.assertExitedOk(await waiter, 'the queued deploy');
    const held = await stack.events('hold-7');
    const queued = await stack.events('queued-7');
    expect(last(held).type).toBe('DeploymentSucceeded');
    expect(last(queued).type).toBe('DeploymentSucceeded');
    expect(first(queued, 'PlanAccepted').at.getTime()).toBeGreaterThanOrEqual(last(held).at.getTime());
  }, 120_000);
});
