import { redisCheck, runReadinessChecks } from './readiness-checks';

describe('runReadinessChecks', () => {
  it('every check passing - ready, no failing checks', async () => {
    const report = await runReadinessChecks([
      { name: 'nats', probe: async () => undefined },
      { name: 'postgres', probe: async () => [{ '?column?': 1 }] },
    ]);
    expect(report.status).toBe('ready');
    expect(report.failing).toEqual([]);
    expect(Object.keys(report.checks)).toEqual(['nats', 'postgres']);
    expect(report.checks.nats.ok).toBe(true);
  });

  it('reports every failing check in check order, with its reason', async () => {
    const report = await runReadinessChecks([
      { name: 'nats', probe: async () => undefined },
      { name: 'postgres', probe: async () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:1')) },
      {
        name: 'redis',
        probe: () => {
          throw new Error('thrown synchronously');
        },
      },
    ]);
    expect(report.status).toBe('unready');
    expect(report.failing).toEqual(['postgres', 'redis']);
    expect(report.checks.postgres).toMatchObject({ ok: false, error: 'connect ECONNREFUSED 127.0.0.1:1' });
    expect(report.checks.redis).toMatchObject({ ok: false, error: 'thrown synchronously' });
  });

  it('a check that never settles fails after the timeout, the others still answer', async () => {
    const started = Date.now();
    const report = await runReadinessChecks(
      [
        { name: 'nats', probe: () => new Promise(() => undefined) },
        { name: 'redis', probe: async () => undefined },
      ],
      150,
    );
    expect(Date.now() - started).toBeLessThan(1000);
    expect(report.failing).toEqual(['nats']);
    expect(report.checks.nats.error).toBe('timed out after 150 ms');
    expect(report.checks.redis.ok).toBe(true);
  });

  it('redisCheck - an answer other than PONG fails', async () => {
    const report = await runReadinessChecks([redisCheck({ ping: async () => 'LOADING' })]);
    expect(report.checks.redis.error).toBe('PING answered "LOADING"');
  });
});
