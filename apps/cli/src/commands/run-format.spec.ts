import type { InstanceCounts, RunSummary } from '@granule/contracts';
import { describeEvent, renderRecap } from './run-format';

const counts = (c: Partial<InstanceCounts>): InstanceCounts => ({
  pending: 0,
  dispatched: 0,
  running: 0,
  succeeded: 0,
  failed: 0,
  skipped: 0,
  dep_failed: 0,
  timed_out: 0,
  not_in_run: 0,
  ...c,
});

const summary = (failedNode: boolean): RunSummary => ({
  runId: 'r1',
  phase: 'succeeded',
  version: 12,
  totals: counts({ succeeded: 5, failed: failedNode ? 1 : 0 }),
  nodes: {
    '1': { ...counts({ succeeded: 3 }), failedNode: false },
    '2': { ...counts({ succeeded: 2, failed: failedNode ? 1 : 0 }), failedNode },
  },
  failures: failedNode ? [{ key: 'configure@2', status: 'failed', outputTail: 'boom' }] : [],
  running: [],
});

describe('renderRecap', () => {
  it('a plain success reads as one', () => {
    expect(renderRecap(summary(false)).split('\n')[0]).toBe('RECAP run r1: succeeded');
  });

  it('a success that fault tolerance carried names the failed nodes in its status line', () => {
    const recap = renderRecap(summary(true)).split('\n');
    expect(recap[0]).toBe('RECAP run r1: succeeded within fault tolerance (1 node failed: 2)');
    expect(recap).toContain('  configure@2: failed');
  });
});

describe('describeEvent', () => {
  const at = '2026-11-26T10:15:00.000Z';
  it('names who stopped and who resumed a run', () => {
    expect(
      describeEvent({
        version: 7,
        at,
        event: {
          type: 'DeploymentStopRequested',
          data: { reason: 'operator', detail: 'stopped by the operator', requestedBy: 'alice' },
        },
      }),
    ).toBe('10:15:00  #7    DeploymentStopRequested  stopped by the operator (alice)');
    expect(
      describeEvent({ version: 9, at, event: { type: 'DeploymentResumed', data: { at, requestedBy: 'bob' } } }),
    ).toBe('10:15:00  #9    DeploymentResumed        by bob');
    // Recorded before runs named who asked: nothing to name.
    expect(describeEvent({ version: 9, at, event: { type: 'DeploymentResumed', data: { at } } })).toBe(
      '10:15:00  #9    DeploymentResumed',
    );
  });
});
