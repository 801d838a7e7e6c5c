import { createMetrics, registerOrchestratorMetrics } from '@granule/observability';
import { RunEventMetrics } from './run-metrics';

let position = 0;
const event = (runId: string, type: string, data: object, globalPosition = String(++position)) => ({
  streamId: `run-${runId}`,
  type,
  data,
  globalPosition,
});

async function granuleLines(metrics: ReturnType<typeof createMetrics>): Promise<string[]> {
  return (await metrics.render())
    .split('\n')
    .filter((l) => /^granule_(task_runs_total|dispatch_to_start_seconds_(sum|count))/.test(l));
}

describe('RunEventMetrics', () => {
  it('counts runs started, runs ended by outcome and dispatches, each event once', async () => {
    const metrics = createMetrics('orchestrator', { processMetrics: false });
    const feed = new RunEventMetrics(metrics, registerOrchestratorMetrics(metrics.registry));
    const requested = event('r1', 'DeploymentRequested', {});
    feed.recordEvent(requested);
    feed.recordEvent(requested); // the outbox delivers at least once
    feed.recordEvent(event('r2', 'DeploymentRequested', {}));
    feed.recordEvent(event('r1', 'TaskDispatched', { key: 'a@n1', attempt: 1, at: '2025-01-01T00:00:00Z' }));
    feed.recordEvent(event('r1', 'TaskDispatched', { key: 'a@n1', attempt: 2, at: '2025-01-01T00:00:01Z' }));
    feed.recordEvent(event('r1', 'DeploymentSucceeded', {}));
    feed.recordEvent(event('r2', 'DeploymentRefused', {}));
    feed.recordEvent(event('r3', 'DeploymentExpired', {}));
    const lines = (await metrics.render())
      .split('\n')
      .filter((l) => /^granule_(runs_started|runs_ended|task_dispatches)_total/.test(l));
    expect(lines).toEqual([
      'granule_runs_started_total{service="orchestrator"} 2',
      'granule_runs_ended_total{outcome="succeeded",service="orchestrator"} 1',
      'granule_runs_ended_total{outcome="refused",service="orchestrator"} 1',
      'granule_runs_ended_total{outcome="expired",service="orchestrator"} 1',
      'granule_task_dispatches_total{service="orchestrator"} 2',
    ]);
  });

  it('counts finished task runs by state and the type its dispatch message gave; unknown without one', async () => {
    const metrics = createMetrics('orchestrator', { processMetrics: false });
    const feed = new RunEventMetrics(metrics);
    feed.recordDispatch({ runId: 'r1', key: 'a@n1', type: 'shell' });
    feed.recordDispatch({ runId: 'r1', key: 'b@n1', type: 'puppet' });
    feed.recordEvent(event('r1', 'TaskSucceeded', { key: 'a@n1', attempt: 1, at: '2025-01-01T00:00:05Z' }));
    feed.recordEvent(event('r1', 'TaskTimedOut', { key: 'b@n1', attempt: 1, at: '2025-01-01T00:00:05Z' }));
    feed.recordEvent(event('r1', 'TaskFailed', { key: 'c@n2', attempt: 1, at: '2025-01-01T00:00:05Z' }));
    feed.recordEvent(event('r1', 'TaskSkipped', { key: 'd@n2', reason: 'fail_on_error', at: '2025-01-01T00:00:05Z' }));
    expect(await granuleLines(metrics)).toEqual([
      'granule_task_runs_total{state="succeeded",type="shell",service="orchestrator"} 1',
      'granule_task_runs_total{state="timed_out",type="puppet",service="orchestrator"} 1',
      'granule_task_runs_total{state="failed",type="unknown",service="orchestrator"} 1',
      'granule_task_runs_total{state="skipped",type="unknown",service="orchestrator"} 1',
      'granule_dispatch_to_start_seconds_sum{service="orchestrator"} 0',
      'granule_dispatch_to_start_seconds_count{service="orchestrator"} 0',
    ]);
  });

  it('observes dispatch-to-start from the events times, per attempt; a start before the dispatch counts 0', async () => {
    const metrics = createMetrics('orchestrator', { processMetrics: false });
    const feed = new RunEventMetrics(metrics);
    feed.recordEvent(
      event('r1', 'TaskDispatched', { key: 'a@n1', attempt: 1, dispatchId: 'x', at: '2025-01-01T00:00:00.000Z' }),
    );
    feed.recordEvent(
      event('r1', 'TaskDispatched', { key: 'a@n1', attempt: 2, dispatchId: 'y', at: '2025-01-01T00:01:00.000Z' }),
    );
    feed.recordEvent(
      event('r2', 'TaskDispatched', { key: 'a@n1', attempt: 1, dispatchId: 'z', at: '2025-01-01T00:00:10.000Z' }),
    );
    feed.recordEvent(event('r1', 'TaskStarted', { key: 'a@n1', attempt: 2, at: '2025-01-01T00:01:01.500Z' }));
    feed.recordEvent(event('r2', 'TaskStarted', { key: 'a@n1', attempt: 1, at: '2025-01-01T00:00:09.000Z' }));
    // Attempt 1 of r1 never started; a start of an attempt never dispatched is not observed.
    feed.recordEvent(event('r3', 'TaskStarted', { key: 'a@n1', attempt: 1, at: '2025-01-01T00:00:09.000Z' }));
    expect(await granuleLines(metrics)).toEqual([
      'granule_dispatch_to_start_seconds_sum{service="orchestrator"} 1.5',
      'granule_dispatch_to_start_seconds_count{service="orchestrator"} 2',
    ]);
  });

  it('a TaskStarted delivered before its TaskDispatched is paired when the dispatch arrives', async () => {
    const metrics = createMetrics('orchestrator', { processMetrics: false });
    const feed = new RunEventMetrics(metrics);
    feed.recordEvent(event('r1', 'TaskStarted', { key: 'a@n1', attempt: 1, at: '2025-01-01T00:00:04.000Z' }));
    feed.recordEvent(
      event('r1', 'TaskDispatched', { key: 'a@n1', attempt: 1, dispatchId: 'x', at: '2025-01-01T00:00:01.000Z' }),
    );
    expect(await granuleLines(metrics)).toEqual([
      'granule_dispatch_to_start_seconds_sum{service="orchestrator"} 3',
      'granule_dispatch_to_start_seconds_count{service="orchestrator"} 1',
    ]);
  });

  it('an event published twice (same global position) is counted once; non-run streams are ignored', async () => {
    const metrics = createMetrics('orchestrator', { processMetrics: false });
    const feed = new RunEventMetrics(metrics);
    const once = event('r1', 'TaskSucceeded', { key: 'a@n1', attempt: 1, at: '2025-01-01T00:00:05Z' }, '42');
    feed.recordEvent(once);
    feed.recordEvent({ ...once });
    feed.recordEvent({ streamId: 'node-n1', type: 'TaskSucceeded', data: { key: 'a@n1' }, globalPosition: '43' });
    expect(await granuleLines(metrics)).toContain(
      'granule_task_runs_total{state="succeeded",type="unknown",service="orchestrator"} 1',
    );
  });
});
