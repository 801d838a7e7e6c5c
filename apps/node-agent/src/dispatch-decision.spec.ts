import type { TaskDispatchMessage } from '@granule/contracts';
import { journalKey, type TaskOutcome } from '@granule/task-runners';
import {
  AGENT_RESTARTED_ERROR,
  checkDispatch,
  decideDispatch,
  executionOf,
  finishedMessage,
  journalKeyOf,
  leftoverGroupOf,
  markerOf,
  pendingRebootOf,
  progressMsgIds,
  rebootOutcome,
  recoverOnStart,
  restartedError,
  startedMessage,
  type TaskMarker,
} from './dispatch-decision';

const dispatch = (over: Partial<TaskDispatchMessage> = {}): TaskDispatchMessage => ({
  runId: 'run-1',
  key: 'install@node-1',
  task: 'install',
  node: 'node-1',
  type: 'shell',
  parameters: { cmd: 'true' },
  attempt: 1,
  dispatchId: 'run-1/install@node-1/1',
  noop: false,
  ...over,
});
const at = (iso: string): Date => new Date(iso);
const succeeded: TaskOutcome = { status: 'succeeded', exitCode: 0, durationMs: 12, outputTail: 'ok\n', attempts: 1 };

describe('decideDispatch', () => {
  const marker = markerOf(dispatch(), at('2030-01-01T00:00:00Z'));

  it('a journaled dispatch is replayed, even when a stale running marker names it', () => {
    expect(decideDispatch({ journaled: succeeded, running: marker })).toEqual({ action: 'replay', outcome: succeeded });
  });

  it('a dispatch the agent was running when it died is failed, not run again', () => {
    expect(decideDispatch({ running: marker })).toEqual({ action: 'fail_restarted' });
  });

  it('a dispatch whose reboot is pending is left alone', () => {
    expect(decideDispatch({ pendingReboot: marker })).toEqual({ action: 'await_reboot' });
  });

  it('anything else runs', () => {
    expect(decideDispatch({})).toEqual({ action: 'run' });
  });
});

describe('checkDispatch', () => {
  it('accepts a consistent dispatch for this node; noop defaults to false', () => {
    const { noop: _noop, ...withoutNoop } = dispatch();
    expect(checkDispatch(withoutNoop, 'node-1')).toEqual({ ok: true, dispatch: dispatch() });
  });

  it('lists every problem and can still answer when run, key and dispatchId are there', () => {
    const result = checkDispatch(
      { ...dispatch(), node: 'node-2', attempt: 0, parameters: [], noop: 'yes', dispatchId: 'run-1/x/1' },
      'node-1',
    );
    expect(result).toEqual({
      ok: false,
      problems: [
        'attempt must be a whole number >= 1',
        'parameters must be an object',
        'noop must be true or false',
        "the dispatch is for node 'node-2', this agent is 'node-1'",
        "key 'install@node-1' is not task@node ('install@node-2')",
        "dispatchId 'run-1/x/1' is not run/key/attempt ('run-1/install@node-1/0')",
      ],
      replyTo: { runId: 'run-1', key: 'install@node-1', node: 'node-2', attempt: 0, dispatchId: 'run-1/x/1' },
    });
  });

  it('secretPaths, when there, must be key paths', () => {
    const paths = [
      ['env', 'DB_PASSWORD'],
      ['files', 0, 'src'],
    ];
    expect(checkDispatch(dispatch({ secretPaths: paths }), 'node-1')).toMatchObject({ ok: true });
    expect(checkDispatch({ ...dispatch(), secretPaths: [['env', {}]] }, 'node-1')).toMatchObject({
      ok: false,
      problems: ['secretPaths must be a list of key paths'],
    });
  });

  it('cannot answer a message without run, key or dispatchId', () => {
    expect(checkDispatch({ task: 't' }, 'n')).toMatchObject({ ok: false, replyTo: undefined });
    expect(checkDispatch('hello', 'n')).toEqual({ ok: false, problems: ['the message is not a JSON object'] });
  });
});

describe('journal keys', () => {
  it("are task-runners' journalKey of run, task, node and attempt", () => {
    expect(journalKeyOf(dispatch({ attempt: 3 }))).toBe(
      journalKey({ runId: 'run-1', taskId: 'install', nodeUid: 'node-1', attempt: 3 }),
    );
    expect(journalKeyOf(dispatch({ attempt: 3 }))).toBe('run-1/install/node-1/3');
  });

  it('stay apart where the unencoded dispatchId would not (slashes inside ids)', () => {
    const a = dispatch({ runId: 'r/a', task: 'b', key: 'b@node-1', dispatchId: 'r/a/b@node-1/1' });
    const b = dispatch({ runId: 'r', task: 'a/b', key: 'a/b@node-1', dispatchId: 'r/a/b@node-1/1' });
    expect(journalKeyOf(a)).not.toBe(journalKeyOf(b));
  });

  it('the execution handed to the runner carries the same four parts', () => {
    expect(executionOf(dispatch({ noop: true, attempt: 2 }))).toEqual({
      runId: 'run-1',
      taskId: 'install',
      nodeUid: 'node-1',
      type: 'shell',
      parameters: { cmd: 'true' },
      attempt: 2,
      noop: true,
    });
  });

  it('a check dispatch - changes nothing even when its noop says false, and asks the runner for a check', () => {
    const check = checkDispatch({ ...dispatch(), check: true, diff: true, noop: false }, 'node-1');
    expect(check).toMatchObject({ ok: true, dispatch: { noop: true, check: true } });
    expect(executionOf(dispatch({ check: true, diff: true }))).toMatchObject({ noop: true, check: true, diff: true });
    expect(executionOf(dispatch())).not.toHaveProperty('check');
    expect(checkDispatch({ ...dispatch(), check: 'yes' }, 'node-1')).toMatchObject({
      ok: false,
      problems: ['check must be true or false'],
    });
  });

  it('the texts at the secret paths are handed to the runner to mask', () => {
    const d = dispatch({
      parameters: { cmd: 'x', env: { DB_PASSWORD: 'hunter2', PIN: 1234, HOME: '/root' } },
      secretPaths: [
        ['env', 'DB_PASSWORD'],
        ['env', 'PIN'],
      ],
    });
    expect(executionOf(d).secrets).toEqual(['hunter2', '1234']);
    expect(executionOf(dispatch()).secrets).toBeUndefined();
  });
});

describe('recoverOnStart', () => {
  const start = at('2030-01-01T00:00:00Z');

  it('reports a task interrupted by the restart as failed, with the time it ran', () => {
    const running = markerOf(dispatch(), start, '$JS.ACK.S.agent-node-1.1.5.5.0.0');
    const [step] = recoverOnStart(running, [], () => undefined, at('2030-01-01T00:00:42Z'));
    expect(step).toEqual({
      marker: running,
      journaled: false,
      outcome: {
        status: 'failed',
        exitCode: null,
        durationMs: 42_000,
        outputTail: '',
        attempts: 1,
        error: AGENT_RESTARTED_ERROR,
        errorCode: 'AGENT_RESTARTED',
      },
    });
    expect(AGENT_RESTARTED_ERROR).toBe('agent restarted while the task was running; not run again');
  });

  it('says when the processes the interrupted task left were stopped; a pending reboot is not concerned', () => {
    const running: TaskMarker = {
      ...markerOf(dispatch(), start),
      process: { pgid: 4242, startTime: 99, runId: 'run-1', taskId: 'install' },
    };
    const reboot = markerOf(
      dispatch({ task: 'r1', key: 'r1@node-1', dispatchId: 'run-1/r1@node-1/1', type: 'reboot' }),
      start,
    );
    const steps = recoverOnStart(running, [reboot], () => undefined, at('2030-01-01T00:00:01Z'), 'stopped');
    expect(steps.map((s) => [s.outcome.status, s.outcome.error])).toEqual([
      ['failed', 'agent restarted while the task was running; not run again (its leftover processes were stopped)'],
      ['succeeded', undefined],
    ]);
  });

  it('reports a journaled outcome as recorded (the process died before sending it)', () => {
    const running = markerOf(dispatch(), start);
    expect(recoverOnStart(running, [], (k) => (k === running.journalKey ? succeeded : undefined), start)).toEqual([
      { marker: running, outcome: succeeded, journaled: true },
    ]);
  });

  it('a reboot whose host is back before the deadline succeeded, with the command output', () => {
    const marker = markerOf(dispatch({ type: 'reboot', parameters: { timeout: 120 } }), start);
    const pending = pendingRebootOf(
      marker,
      { ...succeeded, rebootRequested: true, rebootTimeoutSec: 120, outputTail: 'rebooting\n' },
      at('2030-01-01T00:00:01Z'),
    );
    expect(pending.rebootDeadline).toBe('2030-01-01T00:02:01.000Z');
    const [step] = recoverOnStart(undefined, [pending], () => undefined, at('2030-01-01T00:01:30Z'));
    expect(step.outcome).toEqual({
      status: 'succeeded',
      exitCode: 0,
      durationMs: 90_000,
      outputTail: 'rebooting\n',
      attempts: 1,
    });
  });

  it('a reboot whose host came back after the deadline failed', () => {
    const marker = markerOf(dispatch({ type: 'reboot', parameters: { timeout: 60 } }), start);
    const pending = pendingRebootOf(marker, { ...succeeded, rebootRequested: true, rebootTimeoutSec: 60 }, start);
    const [step] = recoverOnStart(undefined, [pending], () => undefined, at('2030-01-01T00:05:00Z'));
    expect(step.outcome).toMatchObject({
      status: 'failed',
      error: 'the host came back after the reboot timeout (60 s)',
      errorCode: 'AGENT_REBOOT_TIMEOUT',
    });
  });

  it('a reboot the agent died issuing counts from the task start', () => {
    const running = markerOf(dispatch({ type: 'reboot', parameters: {} }), start);
    expect(running.rebootTimeoutSec).toBe(300);
    expect(recoverOnStart(running, [], () => undefined, at('2030-01-01T00:04:59Z'))[0].outcome.status).toBe(
      'succeeded',
    );
    expect(recoverOnStart(running, [], () => undefined, at('2030-01-01T00:05:01Z'))[0].outcome.status).toBe('failed');
  });

  it('the running marker comes first, then pending reboots in order', () => {
    const running = markerOf(dispatch(), start);
    const r1 = markerOf(
      dispatch({ task: 'r1', key: 'r1@node-1', dispatchId: 'run-1/r1@node-1/1', type: 'reboot' }),
      start,
    );
    const r2 = markerOf(
      dispatch({ task: 'r2', key: 'r2@node-1', dispatchId: 'run-1/r2@node-1/1', type: 'reboot' }),
      start,
    );
    expect(recoverOnStart(running, [r1, r2], () => undefined, start).map((s) => s.marker.dispatchId)).toEqual([
      'run-1/install@node-1/1',
      'run-1/r1@node-1/1',
      'run-1/r2@node-1/1',
    ]);
  });
});

describe('leftovers of an interrupted task', () => {
  const group = { pgid: 4242, startTime: 99, bootId: 'b', runId: 'run-1', taskId: 'install' };
  const marker: TaskMarker = { ...markerOf(dispatch(), at('2030-01-01T00:00:00Z')), process: group };

  it('only an interrupted, unjournaled, non-reboot task with a recorded group has leftovers to stop', () => {
    expect(leftoverGroupOf(marker, () => undefined)).toEqual(group);
    expect(leftoverGroupOf(marker, () => succeeded)).toBeUndefined();
    expect(leftoverGroupOf({ ...marker, type: 'reboot' }, () => undefined)).toBeUndefined();
    expect(leftoverGroupOf({ ...marker, process: undefined }, () => undefined)).toBeUndefined();
    expect(leftoverGroupOf(undefined, () => undefined)).toBeUndefined();
  });

  it('the error names a stopped or surviving group; nothing left, or an unrelated group, changes nothing', () => {
    expect([
      restartedError('stopped', 4242),
      restartedError('survived', 4242),
      restartedError('gone', 4242),
      restartedError('unconfirmed', 4242),
      restartedError(),
    ]).toEqual([
      'agent restarted while the task was running; not run again (its leftover processes were stopped)',
      'agent restarted while the task was running; not run again (its leftover processes could not be stopped: process group 4242 still runs)',
      AGENT_RESTARTED_ERROR,
      AGENT_RESTARTED_ERROR,
      AGENT_RESTARTED_ERROR,
    ]);
  });
});

describe('rebootOutcome', () => {
  it('the agent still up at the deadline means the host never rebooted', () => {
    const marker: TaskMarker = {
      ...markerOf(dispatch({ type: 'reboot' }), at('2030-01-01T00:00:00Z')),
      rebootTimeoutSec: 30,
      rebootDeadline: '2030-01-01T00:00:30Z',
    };
    expect(rebootOutcome(marker, at('2030-01-01T00:00:30Z'), false)).toMatchObject({
      status: 'failed',
      error: 'the host did not reboot within the reboot timeout (30 s)',
    });
  });
});

describe('progress messages', () => {
  const now = at('2030-01-01T00:00:05Z');

  it('started names the dispatch and when its marker says it began', () => {
    expect(startedMessage(markerOf(dispatch(), now))).toEqual({
      runId: 'run-1',
      key: 'install@node-1',
      node: 'node-1',
      attempt: 1,
      dispatchId: 'run-1/install@node-1/1',
      status: 'started',
      at: '2030-01-01T00:00:05.000Z',
    });
  });

  it('a finished message carries the outcome and the tries made; fromJournal and error only when set', () => {
    expect(finishedMessage(dispatch(), succeeded, now)).toEqual({
      runId: 'run-1',
      key: 'install@node-1',
      node: 'node-1',
      attempt: 1,
      dispatchId: 'run-1/install@node-1/1',
      status: 'succeeded',
      at: '2030-01-01T00:00:05.000Z',
      exitCode: 0,
      durationMs: 12,
      outputTail: 'ok\n',
      try: 1,
    });
    expect(
      finishedMessage(dispatch(), { ...succeeded, status: 'timed_out', error: 'timed out after 5 s' }, now, true),
    ).toMatchObject({ status: 'timed_out', error: 'timed out after 5 s', fromJournal: true });
  });

  it('a finished message for a marker carries when the task started (the orchestrator records TaskStarted from it when no started came)', () => {
    const marker = markerOf(dispatch(), at('2030-01-01T00:00:04Z'));
    expect(finishedMessage(marker, succeeded, now)).toMatchObject({
      status: 'succeeded',
      at: '2030-01-01T00:00:05.000Z',
      startedAt: '2030-01-01T00:00:04.000Z',
    });
    expect(finishedMessage(dispatch(), succeeded, now)).not.toHaveProperty('startedAt');
  });

  it('message ids: one per started and done, one per delivered message for journal answers', () => {
    expect([progressMsgIds.started('r/k/1'), progressMsgIds.done('r/k/1'), progressMsgIds.replay('r/k/1', 17)]).toEqual(
      ['r/k/1/started', 'r/k/1/done', 'r/k/1/done/replay-17'],
    );
  });
});
