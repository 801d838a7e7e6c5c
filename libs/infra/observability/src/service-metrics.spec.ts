import { Registry } from 'prom-client';
import { outcomeOfCode, outcomeOfStatus, registerAgentMetrics, registerRequestMetrics } from './service-metrics';

describe('service metrics', () => {
  it('outcomes - no code or a status under 400 is ok, INTERNAL or a 5xx failed, anything else refused', () => {
    expect([undefined, 'INVALID_INPUT', 'INTERNAL'].map(outcomeOfCode)).toEqual(['ok', 'refused', 'failed']);
    expect([200, 304, 401, 404, 413, 500, 503].map(outcomeOfStatus)).toEqual([
      'ok',
      'ok',
      'refused',
      'refused',
      'refused',
      'failed',
      'failed',
    ]);
  });

  it('agent - artifact fetch series exist at 0 from the start; a finished task counts once with its duration', async () => {
    const registry = new Registry();
    const agent = registerAgentMetrics(registry);
    const fetches = async () =>
      (await registry.getSingleMetric('granule_agent_artifact_fetches_total')?.get())?.values.map((v) => [
        v.labels.outcome,
        v.value,
      ]);
    expect(await fetches()).toEqual([
      ['fetched', 0],
      ['cached', 0],
      ['failed', 0],
    ]);
    agent.artifactFetched('failed');
    agent.taskFinished('shell', 'failed', 2.5);
    expect(await fetches()).toContainEqual(['failed', 1]);
    const text = await registry.metrics();
    expect(text).toContain('granule_agent_tasks_total{type="shell",outcome="failed"} 1');
    expect(text).toContain('granule_agent_task_duration_seconds_sum{type="shell",outcome="failed"} 2.5');
  });

  it('requests - counted by transport, route and outcome', async () => {
    const registry = new Registry();
    const requests = registerRequestMetrics(registry);
    requests.answered('nats', 'config.env.get', 'ok', 0.01);
    requests.answered('nats', 'config.env.get', 'ok', 0.02);
    requests.answered('http', 'GET /nodes/:uid', 'refused', 0.01);
    const text = await registry.metrics();
    expect(text).toContain('granule_requests_total{transport="nats",route="config.env.get",outcome="ok"} 2');
    expect(text).toContain('granule_requests_total{transport="http",route="GET /nodes/:uid",outcome="refused"} 1');
    expect(text).toContain('granule_request_duration_seconds_count{transport="nats",route="config.env.get"} 2');
  });
});
