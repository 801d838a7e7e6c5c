import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { RunListEntry, RunSummary } from '@granule/contracts';
import { E2eStack, FIXTURES, dataOf, keysOf, versionOf, waitUntil, type StoredEvent } from './stack';

// Failures and operator commands on four agents: a controller (critical) and three computes in
// the group `compute` (fault_tolerance: 1). Tasks fail or sleep where the test says so.
const GROUPS = [
  '--tasks',
  path.join(FIXTURES, 'groups/tasks.yaml'),
  '--nodes',
  path.join(FIXTURES, 'groups/nodes.yaml'),
];
const ALL_KEYS = [
  'configure@2',
  'configure@3',
  'configure@4',
  'finish@2',
  'finish@3',
  'finish@4',
  'post@1',
  'post@2',
  'post@3',
  'post@4',
  'prepare@1',
  'prepare@2',
  'prepare@3',
  'prepare@4',
  'report@1',
];

const sorted = (list: string[]): string[] => [...list].sort();
const after = (events: StoredEvent[], version: number): StoredEvent[] => events.filter((e) => e.version > version);

describe('failures, fault tolerance and operator commands (whole stack)', () => {
  let stack: E2eStack;

  beforeAll(async () => {
    stack = await E2eStack.start({ name: 'failures', agents: ['1', '2', '3', '4'] });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  }, 60_000);

  it('a failed node within the fault tolerance - the run succeeds, the node failed, its later tasks dep_failed, exit 0', async () => {
    stack.setFailing('configure@3');
    const r = await stack.granule(['deploy', ...GROUPS, '--run-id', 'ft-within', '--watch']);
    stack.setFailing('configure@3', false);
    stack.assertExitedOk(r, 'granule deploy ft-within');
    const events = await stack.events('ft-within');
    const failed = events.find((e) => e.type === 'TaskFailed');
    expect(failed && [failed.data.key, failed.data.exitCode, String(failed.data.outputTail).trim()]).toEqual([
      'configure@3',
      1,
      'configure@3 fails on purpose',
    ]);
    expect(events.filter((e) => e.type === 'NodeFailed').map((e) => e.data)).toEqual([
      { node: '3', reason: 'task_failed', task: 'configure' },
    ]);
    expect(events.filter((e) => e.type === 'GroupToleranceExceeded' || e.type === 'DeploymentStopRequested')).toEqual(
      [],
    );
    // The group's end (and so post_deployment) is reached with node 3 failed: the other nodes complete.
    expect(sorted(keysOf(events, 'TaskSucceeded'))).toEqual(
      ALL_KEYS.filter((k) => !k.endsWith('@3') || k === 'prepare@3'),
    );
    expect(sorted(keysOf(events, 'TaskDispatched'))).toEqual(
      ALL_KEYS.filter((k) => !k.endsWith('@3') || k === 'prepare@3' || k === 'configure@3'),
    );
    const last = events[events.length - 1];
    expect([last.type, dataOf(last, 'DeploymentSucceeded').failedNodes]).toEqual(['DeploymentSucceeded', ['3']]);
    expect(sorted(stack.ledger('ft-within'))).toEqual(ALL_KEYS.filter((k) => k !== 'finish@3' && k !== 'post@3'));

    const summary = JSON.parse((await stack.granule(['runs', 'show', 'ft-within', '-o', 'json'])).stdout) as RunSummary;
    expect([summary.phase, summary.nodes['3']]).toEqual([
      'succeeded',
      expect.objectContaining({ succeeded: 1, failed: 1, dep_failed: 2, failedNode: true }),
    ]);
    expect(summary.nodes['4']).toEqual(
      expect.objectContaining({ succeeded: 4, failed: 0, dep_failed: 0, failedNode: false }),
    );
    const recap = r.stdout.split('\n');
    expect(recap[0]).toBe('RECAP run ft-within: succeeded within fault tolerance (1 node failed: 3)');
    expect(
      recap
        .find((l) => l.trim().startsWith('3 '))
        ?.trim()
        .split(/\s+/),
    ).toEqual(['3', '1', '1', '0', '2', '0', 'FAILED']);
    expect(r.stdout).toContain('failures:\n  configure@3: failed');
  }, 90_000);

  it('two failed nodes beyond the tolerance - the run stops: no dispatch after the stop, running tasks finish, exit 1', async () => {
    stack.setFailing('configure@2');
    stack.setFailing('configure@3');
    // Failing after 1 s leaves report@1 time to run; configure@4 is still running at the stop.
    stack.setSlow('configure@2', 1);
    stack.setSlow('configure@3', 1);
    stack.setSlow('configure@4', 4);
    const r = await stack.granule(['deploy', ...GROUPS, '--run-id', 'ft-beyond', '--watch']);
    for (const k of ['configure@2', 'configure@3', 'configure@4']) stack.setSlow(k, 0);
    expect(r.code).toBe(1);
    expect(r.stdout.split('\n')[0]).toBe('RECAP run ft-beyond: failed — too many failed nodes in group compute');
    const events = await stack.events('ft-beyond');
    const exceeded = events.find((e) => e.type === 'GroupToleranceExceeded');
    expect(exceeded?.data).toEqual({ group: 'compute', failed: ['2', '3'], tolerance: 1 });
    const stop = events.find((e) => e.type === 'DeploymentStopRequested');
    if (!stop || !exceeded) throw new Error('the run was not stopped');
    expect([stop.version, stop.data]).toEqual([
      exceeded.version + 1,
      { reason: 'fault_tolerance', detail: 'too many failed nodes in group compute' },
    ]);
    // Nothing new started after the stop; the task that was running finished and was recorded.
    // (Its `started` report may come before or after the stop: the agent sends it a second in.)
    expect(after(events, stop.version).filter((e) => e.type === 'TaskDispatched')).toEqual([]);
    const settled = after(events, stop.version).filter((e) => e.type !== 'TaskStarted' || e.data.key !== 'configure@4');
    expect(settled.map((e) => [e.type, e.data.key ?? null])).toEqual([
      ['TaskSucceeded', 'configure@4'],
      ['DeploymentFailed', null],
    ]);
    expect(dataOf(events[events.length - 1], 'DeploymentFailed')).toEqual(
      expect.objectContaining({ reason: 'too many failed nodes in group compute', failedNodes: ['2', '3'] }),
    );
    expect(sorted(stack.ledger('ft-beyond'))).toEqual([
      'configure@2',
      'configure@3',
      'configure@4',
      'prepare@1',
      'prepare@2',
      'prepare@3',
      'prepare@4',
      'report@1',
    ]);
  }, 90_000);

  it('retry --failed-only after fixing the failure - a new run reruns only the failed and dep_failed task instances', async () => {
    stack.setFailing('configure@2', false);
    stack.setFailing('configure@3', false);
    const r = await stack.granule(['retry', 'ft-beyond', '--failed-only', '--run-id', 'ft-retry', '--watch']);
    expect([r.code, r.stderr.split('\n')[0]]).toEqual([0, 'run ft-retry (retry of ft-beyond)']);
    const events = await stack.events('ft-retry');
    expect(dataOf(events[0], 'DeploymentRequested').retryOf).toEqual({ runId: 'ft-beyond', failedOnly: true });
    // finish@4, post@1 and post@4 were never reached (pending at the stop): neither failed nor dep_failed.
    const only = ['configure@2', 'configure@3', 'finish@2', 'finish@3', 'post@2', 'post@3'];
    expect(sorted(dataOf(events[1], 'PlanAccepted').only ?? [])).toEqual(only);
    expect(sorted(keysOf(events, 'TaskDispatched'))).toEqual(only);
    expect(sorted(stack.ledger('ft-retry'))).toEqual(only);
    expect([events[events.length - 1].type, events[events.length - 1].data.failedNodes]).toEqual([
      'DeploymentSucceeded',
      [],
    ]);
  }, 90_000);

  it('stop during a run - DeploymentStopped once running tasks finish; resume - continues to success, every task once', async () => {
    // Long enough for the stop to arrive while they run, on a busy machine too.
    for (const uid of ['1', '2', '3', '4']) stack.setSlow(`prepare@${uid}`, 6);
    const started = await stack.granule(['deploy', ...GROUPS, '--run-id', 'op-stop']);
    expect([started.code, started.stdout]).toEqual([0, 'op-stop\n']);
    // Followed live as JSON lines from here until the run ends (stopped).
    const following = stack.granule(['runs', 'events', 'op-stop', '--follow', '-o', 'json']);
    await stack.waitForEvent('op-stop', 'TaskStarted');
    const stopped = await stack.granule(['stop', 'op-stop']);
    expect([stopped.code, stopped.stdout]).toEqual([0, 'stopping op-stop\n']);
    for (const uid of ['1', '2', '3', '4']) stack.setSlow(`prepare@${uid}`, 0);
    const events = await stack.waitForEnd('op-stop');
    const stop = events.find((e) => e.type === 'DeploymentStopRequested');
    if (!stop) throw new Error('no DeploymentStopRequested');
    expect(stop.data).toEqual({ reason: 'operator', detail: 'stopped by the operator', requestedBy: 'e2e-operator' });
    expect(after(events, stop.version).filter((e) => e.type === 'TaskDispatched')).toEqual([]);
    expect(
      sorted(
        after(events, stop.version)
          .filter((e) => e.type === 'TaskSucceeded')
          .map((e) => String(e.data.key)),
      ),
    ).toEqual(['prepare@1', 'prepare@2', 'prepare@3', 'prepare@4']);
    expect(events[events.length - 1].type).toBe('DeploymentStopped');
    const followed = await following;
    stack.assertExitedOk(followed, 'runs events op-stop --follow -o json');
    const lines = followed.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { version: number; event: { type: string } });
    expect(lines.map((l) => [l.version, l.event.type])).toEqual(events.map((e) => [e.version, e.type]));
    expect(sorted(stack.ledger('op-stop'))).toEqual(['prepare@1', 'prepare@2', 'prepare@3', 'prepare@4']);
    const show = JSON.parse((await stack.granule(['runs', 'show', 'op-stop', '-o', 'json'])).stdout) as RunSummary;
    expect([show.phase, show.totals.succeeded, show.totals.pending]).toEqual(['stopped', 4, 11]);

    const resumed = await stack.granule(['resume', 'op-stop']);
    expect([resumed.code, resumed.stdout, resumed.stderr]).toEqual([0, 'resumed op-stop\n', '']);
    const all = await stack.waitForEvent('op-stop', 'DeploymentSucceeded');
    const resumedAt = versionOf(all, 'DeploymentResumed');
    expect(resumedAt).toBe(events.length + 1);
    expect(sorted(keysOf(after(all, resumedAt), 'TaskDispatched'))).toEqual(
      ALL_KEYS.filter((k) => !k.startsWith('prepare')),
    );
    expect(sorted(stack.ledger('op-stop'))).toEqual(ALL_KEYS);
  }, 90_000);

  it('a task past its timeout - the agent kills it and reports it timed out; the critical node fails the run', async () => {
    const r = await stack.granule([
      'deploy',
      '--tasks',
      path.join(FIXTURES, 'timeout/tasks.yaml'),
      '--nodes',
      path.join(FIXTURES, 'groups/nodes.yaml'),
      '--run-id',
      'timeout-1',
      '--watch',
    ]);
    expect(r.code).toBe(1);
    const events = await stack.events('timeout-1');
    const timedOut = events.find((e) => e.type === 'TaskTimedOut');
    expect(timedOut?.data.key).toBe('hang@1');
    // The agent enforced the 2 s timeout (the orchestrator's own watchdog would take 32 s).
    expect(Number(timedOut?.data.durationMs)).toBeGreaterThanOrEqual(2000);
    expect(Number(timedOut?.data.durationMs)).toBeLessThan(10_000);
    expect(events.filter((e) => e.type === 'NodeFailed').map((e) => e.data)).toEqual([
      { node: '1', reason: 'task_timed_out', task: 'hang' },
    ]);
    expect(events.find((e) => e.type === 'DeploymentStopRequested')?.data).toEqual({
      reason: 'critical_node',
      detail: 'node 1 failed and belongs to no fault-tolerance group',
    });
    expect(events[events.length - 1].type).toBe('DeploymentFailed');
    expect(keysOf(events, 'TaskDispatched')).not.toContain('after-hang@1');
    expect(r.stdout.split('\n')[0]).toBe(
      'RECAP run timeout-1: failed — node 1 failed and belongs to no fault-tolerance group',
    );
    // The sleep and its shell are gone, and the command never got past the sleep.
    const pidFile = path.join(stack.dir, 'hang.pid');
    expect(existsSync(pidFile)).toBe(true);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    await waitUntil(() => stack.taskProcesses().length === 0, 'the timed-out task processes to be gone', 5000);
    expect(existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z')).toBe(false);
    expect(stack.ledger().filter((l) => l === 'slept')).toEqual([]);
    expect(stack.ledger('timeout-1').sort()).toEqual(['hang@1', 'quick@2', 'quick@3', 'quick@4']);
  }, 90_000);

  it('runs list filters by status, start time and environment; a status typo is a usage error', async () => {
    const list = async (...args: string[]): Promise<RunListEntry[]> => {
      const r = await stack.granule(['runs', 'list', '-o', 'json', ...args]);
      stack.assertExitedOk(r, `runs list ${args.join(' ')}`);
      return JSON.parse(r.stdout) as RunListEntry[];
    };
    const ids = (entries: RunListEntry[]): string[] => entries.map((e) => e.runId).sort();
    const all = await list();
    expect(ids(all)).toEqual(expect.arrayContaining(['ft-beyond', 'ft-within', 'op-stop', 'timeout-1']));
    const failed = ids(all.filter((e) => e.phase === 'failed'));
    expect(failed).toEqual(expect.arrayContaining(['ft-beyond', 'timeout-1']));
    expect(ids(await list('--status', 'failed'))).toEqual(failed);
    expect(ids(await list('--status', 'failed,succeeded'))).toEqual(
      ids(all.filter((e) => e.phase === 'failed' || e.phase === 'succeeded')),
    );
    expect(ids(await list('--since', '1h'))).toEqual(ids(all));
    expect(await list('--until', '2020-01-01')).toEqual([]);
    // These runs were deployed inline, with no environment.
    expect(await list('--env', 'prod')).toEqual([]);
    const bad = await stack.granule(['runs', 'list', '--status', 'faild']);
    expect([bad.code, bad.stderr.trim()]).toEqual([
      2,
      'error: --status faild: expected phases among requested, queued, running, stopping, succeeded, failed, stopped, refused, expired',
    ]);
  }, 60_000);

  it('a deploy whose filters name a task or node that does not exist is refused, and no run is recorded', async () => {
    const r = await stack.granule(['deploy', ...GROUPS, '--run-id', 'typo', '--only', 'configur', '--node', '9']);
    expect([r.code, r.stdout, r.stderr.trim().split('\n')]).toEqual([
      1,
      '',
      ['error: --only configur: no task has this id', 'error: --node 9: no node has this uid'],
    ]);
    expect(await stack.events('typo')).toEqual([]);
    // Names that exist go through: the run is recorded and runs.
    const ok = await stack.granule(['deploy', ...GROUPS, '--run-id', 'filtered', '--only', 'prepare', '--node', '1,2']);
    stack.assertExitedOk(ok, 'deploy --only prepare --node 1,2');
    const events = await stack.waitForEnd('filtered', 60_000);
    expect(events[events.length - 1].type).toBe('DeploymentSucceeded');
    expect(stack.ledger('filtered').sort()).toEqual(['prepare@1', 'prepare@2']);
  }, 90_000);
});
