import { createMetrics } from './granule-metrics';

describe('createMetrics', () => {
  it('renders the Granule metrics labelled with the service, in the Prometheus text format', async () => {
    const metrics = createMetrics('orchestrator', { processMetrics: false });
    metrics.taskRuns.inc({ state: 'succeeded', type: 'shell' }, 2);
    metrics.runs.set({ state: 'running' }, 3);
    metrics.consumerLag.set({ consumer: 'granule-nats-outbox' }, 7);
    metrics.dispatchToStart.observe(0.3);
    metrics.eventLogAppends.inc(5);
    const text = await metrics.render();
    expect(metrics.contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(text.split('\n').filter((l) => l.startsWith('granule_') && !l.includes('_bucket'))).toEqual([
      'granule_runs{state="running",service="orchestrator"} 3',
      'granule_task_runs_total{state="succeeded",type="shell",service="orchestrator"} 2',
      'granule_dispatch_to_start_seconds_sum{service="orchestrator"} 0.3',
      'granule_dispatch_to_start_seconds_count{service="orchestrator"} 1',
      'granule_event_log_appends_total{service="orchestrator"} 5',
      'granule_event_log_consumer_lag{consumer="granule-nats-outbox",service="orchestrator"} 7',
    ]);
    expect(text).toContain(
      'granule_dispatch_to_start_seconds_bucket{le="0.25",service="orchestrator"} 0\ngranule_dispatch_to_start_seconds_bucket{le="0.5",service="orchestrator"} 1',
    );
  });

  it('runs the collectors before rendering; a failing collector keeps the previous values', async () => {
    const metrics = createMetrics('orchestrator', { processMetrics: false });
    let lag = 4;
    metrics.addCollector(() => {
      metrics.consumerLag.set({ consumer: 'c' }, lag);
    });
    metrics.addCollector(async () => {
      throw new Error('database down');
    });
    expect(await metrics.render()).toContain('granule_event_log_consumer_lag{consumer="c",service="orchestrator"} 4');
    lag = 9;
    expect(await metrics.render()).toContain('granule_event_log_consumer_lag{consumer="c",service="orchestrator"} 9');
  });

  it('runMetrics false - only process metrics are exported', async () => {
    const text = await createMetrics('node-agent', { runMetrics: false }).render();
    expect(text).not.toContain('granule_');
    expect(text).toContain('process_cpu_user_seconds_total{service="node-agent"}');
    expect(text).toContain('nodejs_heap_size_used_bytes{service="node-agent"}');
  });

  it('two registries in one process do not share values', async () => {
    const a = createMetrics('a', { processMetrics: false });
    const b = createMetrics('b', { processMetrics: false });
    a.eventLogAppends.inc(3);
    expect(await b.render()).toContain('granule_event_log_appends_total{service="b"} 0');
  });
});
