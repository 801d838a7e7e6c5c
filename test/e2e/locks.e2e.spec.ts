import path from 'node:path';
import { E2eStack, FIXTURES, dataOf, type StoredEvent } from './stack';

// Node locks (ADR 0024) on four agents of one environment (the `groups` fixture: a controller and
// three computes). A deploy that needs a node another running deploy holds is refused naming the
// holder, or queued with --wait; deploys of disjoint nodes run side by side; a run gives its nodes
// back when it fails or is stopped; the locks are in the event log, so they outlive the
// orchestrator that took them.
const GROUPS = [
  '--tasks',
  path.join(FIXTURES, 'groups/tasks.yaml'),
  '--nodes',
  path.join(FIXTURES, 'groups/nodes.yaml'),
];

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
    for (const key of ['prepare@1', 'prepare@3']) {
      stack.setSlow(key, 0);
      stack.setFailing(key, false);
    }
  });

  /** The last event of each node's lock stream, straight from PostgreSQL. */
  async function lockOf(uid: string): Promise<{ type: string; runId: string } | undefined> {
    const rows: { type: string; data: { runId: string } }[] = await stack.dataSource.query(
      `SELECT type, data FROM granule_events WHERE stream_id = $1 ORDER BY stream_version DESC LIMIT 1`,
      [`lock-${uid}`],
    );
    return rows[0] ? { type: rows[0].type, runId: rows[0].data.runId } : undefined;
  }

  it('a second deploy while the first runs - refused naming the first and how to wait or stop it; nothing of it runs', async () => {
    stack.setSlow('prepare@1', 4);
    const holder = stack.granule(['deploy', ...GROUPS, '--run-id', 'hold-1', '--watch']);
    await stack.waitForEvent('hold-1', 'PlanAccepted');
    const r = await stack.granule(['deploy', ...GROUPS, '--run-id', 'second-1']);
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
    stack.setSlow('prepare@1', 3);
    const holder = stack.granule(['deploy', ...GROUPS, '--run-id', 'hold-2', '--watch']);
    await stack.waitForEvent('hold-2', 'PlanAccepted');
    const waiter = await stack.granule(['deploy', ...GROUPS, '--run-id', 'queued-2', '--wait', '--watch']);
    stack.assertExitedOk(waiter, 'deploy --wait');
    expect(waiter.stderr).toMatch(
      /#2 +DeploymentQueued +waits for nodes held by 1, 2, 3, 4 \(run hold-2\); goes on when they are free$/m,
    );
    expect(waiter.stdout.split('\n')[0]).toBe('RECAP run queued-2: succeeded');
    stack.assertExitedOk(await holder, 'the holding deploy');
    const held = await stack.events('hold-2');
    const queued = await stack.events('queued-2');
    expect(typesOf(queued).slice(0, 3)).toEqual(['DeploymentRequested', 'DeploymentQueued', 'PlanAccepted']);
    // Its first dispatch came after the holder's end, and every one of its tasks ran after every
    // one of the holder's (the ledger is appended in the order the tasks ran).
    expect(first(queued, 'TaskDispatched').at.getTime()).toBeGreaterThanOrEqual(last(held).at.getTime());
    const ledger = stack.ledger().filter((l) => /^(hold-2|queued-2) /.test(l));
    const firstQueued = ledger.findIndex((l) => l.startsWith('queued-2 '));
    expect(firstQueued).toBeGreaterThan(0);
    expect(ledger.slice(firstQueued).every((l) => l.startsWith('queued-2 '))).toBe(true);
    expect(ledger.filter((l) => l.startsWith('queued-2 '))).toHaveLength(15);
  }, 90_000);

  it('two deploys of disjoint nodes of the environment - both run at the same time', async () => {
    stack.setSlow('prepare@1', 3);
    stack.setSlow('prepare@3', 3);
    const [a, b] = await Promise.all([
      stack.granule(['deploy', ...GROUPS, '--node', '1,2', '--run-id', 'part-a', '--watch']),
      stack.granule(['deploy', ...GROUPS, '--node', '3,4', '--run-id', 'part-b', '--watch']),
    ]);
    stack.assertExitedOk(a, 'deploy --node 1,2');
    stack.assertExitedOk(b, 'deploy --node 3,4');
    const ea = await stack.events('part-a');
    const eb = await stack.events('part-b');
    expect(typesOf(ea)).not.toContain('DeploymentQueued');
    expect(typesOf(eb)).not.toContain('DeploymentQueued');
    // Each started before the other ended: they overlapped.
    expect(first(ea, 'TaskDispatched').at.getTime()).toBeLessThan(last(eb).at.getTime());
    expect(first(eb, 'TaskDispatched').at.getTime()).toBeLessThan(last(ea).at.getTime());
    expect(await lockOf('1')).toEqual({ type: 'NodeReleased', runId: 'part-a' });
    expect(await lockOf('4')).toEqual({ type: 'NodeReleased', runId: 'part-b' });
  }, 90_000);

  it('a run that failed - gave its nodes back: the next deploy is not refused', async () => {
    stack.setFailing('prepare@1');
    const failed = await stack.granule(['deploy', ...GROUPS, '--run-id', 'fails-4', '--watch']);
    expect(failed.code).toBe(1);
    expect(last(await stack.events('fails-4')).type).toBe('DeploymentFailed');
    expect(await lockOf('1')).toEqual({ type: 'NodeReleased', runId: 'fails-4' });
    stack.setFailing('prepare@1', false);
    stack.assertExitedOk(
      await stack.granule(['deploy', ...GROUPS, '--run-id', 'after-fail-4', '--watch']),
      'a deploy after a failed one',
    );
  }, 90_000);

  it('a run stopped with granule stop - gave its nodes back: the next deploy is not refused', async () => {
    stack.setSlow('prepare@1', 3);
    const holder = stack.granule(['deploy', ...GROUPS, '--run-id', 'stop-5', '--watch']);
    await stack.waitForEvent('stop-5', 'TaskStarted');
    stack.assertExitedOk(await stack.granule(['stop', 'stop-5']), 'granule stop');
    await holder;
    expect(last(await stack.waitForEnd('stop-5')).type).toBe('DeploymentStopped');
    expect(await lockOf('1')).toEqual({ type: 'NodeReleased', runId: 'stop-5' });
    stack.setSlow('prepare@1', 0);
    stack.assertExitedOk(
      await stack.granule(['deploy', ...GROUPS, '--run-id', 'after-stop-5', '--watch']),
      'a deploy after a stopped one',
    );
    // The stopped run takes its nodes again when resumed (nobody holds them now) and ends.
    stack.assertExitedOk(await stack.granule(['resume', 'stop-5']), 'granule resume');
    expect(last(await stack.waitForEnd('stop-5')).type).toBe('DeploymentSucceeded');
  }, 90_000);

  it('the orchestrator SIGKILLed and started again mid-run - the locks hold: a deploy is still refused naming the run', async () => {
    stack.setSlow('prepare@1', 6);
    const holder = stack.granule(['deploy', ...GROUPS, '--run-id', 'hold-6', '--watch']);
    await stack.waitForEvent('hold-6', 'TaskStarted');
    await stack.service('orchestrator').kill('SIGKILL');
    await stack.service('orchestrator').start();
    const r = await stack.granule(['deploy', ...GROUPS, '--run-id', 'second-6']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('nodes held by a running deployment: 1, 2, 3, 4 (run hold-6)');
    // A queued one survives the restart too, and runs once the holder ended.
    const waiter = stack.granule(['deploy', ...GROUPS, '--run-id', 'queued-6', '--wait', '--watch']);
    await stack.waitForEvent('queued-6', 'DeploymentQueued');
    await stack.service('orchestrator').kill('SIGKILL');
    await stack.service('orchestrator').start();
    stack.assertExitedOk(await holder, 'the holding deploy');
    stack.assertExitedOk(await waiter, 'the queued deploy');
    const held = await stack.events('hold-6');
    const queued = await stack.events('queued-6');
    expect(last(queued).type).toBe('DeploymentSucceeded');
    expect(first(queued, 'PlanAccepted').at.getTime()).toBeGreaterThanOrEqual(last(held).at.getTime());
  }, 120_000);
});
