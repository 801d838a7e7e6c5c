import { RepeatedFailureLog } from './repeated-failure-log';

function setUp(level?: 'warn' | 'error') {
  const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  const record = (lvl: string) => (fields: object, message: string) =>
    void lines.push({ level: lvl, fields: fields as Record<string, unknown>, message });
  let now = 1_000_000;
  const log = new RepeatedFailureLog(
    { warn: record('warn'), error: record('error'), info: record('info') },
    {
      failing: 'tick failed; trying again every tick',
      recovered: 'ticks work again',
      remindEveryMs: 30_000,
      clock: () => now,
      ...(level ? { level } : {}),
    },
  );
  return { log, lines, advance: (ms: number) => (now += ms) };
}

describe('RepeatedFailureLog', () => {
  it('logs the first failure, then one reminder per interval with the count and duration, then the recovery once', () => {
    const { log, lines, advance } = setUp();
    // A failure every 200 ms for 30 s: 151 attempts.
    for (let k = 0; k <= 150; k++) {
      log.failed(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { runId: 'r1' });
      advance(200);
    }
    expect(log.failing).toBe(true);
    log.succeeded();
    log.succeeded();
    expect(lines).toEqual([
      {
        level: 'warn',
        fields: { runId: 'r1', err: 'connect ECONNREFUSED 127.0.0.1:5432' },
        message: 'tick failed; trying again every tick',
      },
      {
        level: 'warn',
        fields: { runId: 'r1', err: 'connect ECONNREFUSED 127.0.0.1:5432', failedAttempts: 151, failingForS: 30 },
        message: 'tick failed; trying again every tick',
      },
      { level: 'info', fields: { failedAttempts: 151, failedForS: 30 }, message: 'ticks work again' },
    ]);
    expect(log.failing).toBe(false);
  });

  it('a new outage after a recovery is logged at once, at the chosen level, with its own count', () => {
    const { log, lines, advance } = setUp('error');
    log.failed('first');
    log.failed('first');
    log.succeeded();
    advance(1000);
    log.failed(new Error('second'));
    expect(lines.map((l) => [l.level, l.message, l.fields.err ?? l.fields.failedAttempts])).toEqual([
      ['error', 'tick failed; trying again every tick', 'first'],
      ['info', 'ticks work again', 2],
      ['error', 'tick failed; trying again every tick', 'second'],
    ]);
  });

  it('describes the error with the given function', () => {
    const lines: string[] = [];
    const log = new RepeatedFailureLog(
      {
        warn: (f: object) => void lines.push((f as { err: string }).err),
        error: () => undefined,
        info: () => undefined,
      },
      { failing: 'tick failed', recovered: 'ok', describe: (err) => `in words: ${(err as Error).name}` },
    );
    log.failed(new TypeError('x'));
    expect(lines).toEqual(['in words: TypeError']);
  });
});
