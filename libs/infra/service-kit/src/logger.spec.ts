import {
  createLogger,
  forTask,
  formatLogLine,
  LogSettingsError,
  maskSecretsInText,
  readLogSettings,
  taskBindings,
  type LoggerOptions,
} from './logger';

function capture(options: Omit<LoggerOptions, 'destination'> = {}) {
  const lines: string[] = [];
  const logger = createLogger('orchestrator', { ...options, destination: { write: (l: string) => lines.push(l) } });
  return { logger, lines, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('createLogger', () => {
  it('json - one object a line with ISO time, level name, service, pid, the fields and msg', () => {
    const { logger, lines, records } = capture();
    logger.info({ runId: 'r1' }, 'run started');
    expect(lines).toHaveLength(1);
    expect(lines[0].endsWith('}\n')).toBe(true);
    expect(records()[0]).toEqual({
      level: 'info',
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      service: 'orchestrator',
      pid: process.pid,
      runId: 'r1',
      msg: 'run started',
    });
  });

  it('bindings - given fields are on every line, child bindings on every line of the child', () => {
    const { logger, records } = capture({ bindings: { node: 'n1' } });
    logger.info('up');
    forTask(logger, { runId: 'r1', key: 'deploy@n1' }).warn({ attempt: 2 }, 'task failed');
    expect(records().map(({ node, runId, task, key, msg }) => ({ node, runId, task, key, msg }))).toEqual([
      { node: 'n1', runId: undefined, task: undefined, key: undefined, msg: 'up' },
      { node: 'n1', runId: 'r1', task: 'deploy', key: 'deploy@n1', msg: 'task failed' },
    ]);
  });

  it('level - lines under the level are not written', () => {
    const { logger, records } = capture({ level: 'warn' });
    logger.info('quiet');
    logger.error('loud');
    expect(records().map((r) => [r['level'], r['msg']])).toEqual([['error', 'loud']]);
  });

  it('secrets - secret-named keys are redacted at the top and one level down, URL credentials masked in messages', () => {
    const { logger, lines, records } = capture();
    logger.info(
      {
        password: 'hunter22',
        config: { apiToken: 'tok-123456789' },
        req: { headers: { authorization: 'Bearer abc' } },
      },
      'connecting to nats://agent:s3cret@nats:4222 and redis://:pw@redis:6379 (token nats://T0KEN@h)',
    );
    expect(lines.join('')).not.toMatch(/hunter22|tok-123456789|Bearer abc|s3cret|:pw@|T0KEN/);
    expect(records()[0]).toMatchObject({
      password: '[redacted]',
      config: { apiToken: '[redacted]' },
      req: { headers: { authorization: '[redacted]' } },
      msg: 'connecting to nats://agent:***@nats:4222 and redis://:***@redis:6379 (token nats://***@h)',
    });
  });

  it('text - the same record as one readable line', () => {
    const { logger, lines } = capture({ format: 'text' });
    forTask(logger, { runId: 'r1', key: 'a@n1' }).info({ attempt: 2, err: 'exit 1' }, 'task failed');
    expect(lines).toEqual([
      expect.stringMatching(
        /^\d\d:\d\d:\d\d\.\d{3} INFO {2}orchestrator run=r1 task=a node=n1 \| task failed attempt=2 err="exit 1"\n$/,
      ),
    ]);
  });
});

describe('formatLogLine', () => {
  it('puts time, level, service and what the line is about first, then the message and the other fields', () => {
    const line = JSON.stringify({
      level: 'warn',
      time: '2026-11-25T18:30:01.250Z',
      service: 'node-agent',
      pid: 7,
      node: 'n2',
      msg: 'slow',
      took: { ms: 5 },
    });
    expect(formatLogLine(line)).toBe('18:30:01.250 WARN  node-agent node=n2 | slow took={"ms":5}\n');
  });

  it('leaves a line that is not a JSON object as it is', () => {
    expect(formatLogLine('plain words\n')).toBe('plain words\n');
    expect(formatLogLine('[1,2]')).toBe('[1,2]');
  });
});

describe('taskBindings', () => {
  it('splits task@node at its last @, and given task and node win', () => {
    expect(taskBindings({ runId: 'r', key: 'a@b@n1' })).toEqual({ runId: 'r', key: 'a@b@n1', task: 'a@b', node: 'n1' });
    expect(taskBindings({ key: 'solo' })).toEqual({ key: 'solo', task: 'solo' });
    expect(taskBindings({ runId: 'r', node: 'n3' })).toEqual({ runId: 'r', node: 'n3' });
  });
});

describe('maskSecretsInText', () => {
  it('masks nkey seeds and leaves text without credentials alone', () => {
    const seed = `SU${'A'.repeat(56)}`;
    expect(maskSecretsInText(`seed ${seed} here`)).toBe('seed [redacted] here');
    expect(maskSecretsInText('mail ops@example.com at https://example.com/a@b')).toBe(
      'mail ops@example.com at https://example.com/a@b',
    );
  });
});

describe('readLogSettings', () => {
  it('defaults to info, json off a terminal and text on one', () => {
    expect(readLogSettings({}, false)).toEqual({ level: 'info', format: 'json' });
    expect(readLogSettings({}, true)).toEqual({ level: 'info', format: 'text' });
    expect(readLogSettings({ GRANULE_LOG_FORMAT: 'json', GRANULE_LOG_LEVEL: 'DEBUG' }, true)).toEqual({
      level: 'debug',
      format: 'json',
    });
  });

  it('refuses an unknown value naming the variable, what it expects and what it found', () => {
    expect(() => readLogSettings({ GRANULE_LOG_FORMAT: 'pretty' }, false)).toThrow(
      new LogSettingsError('INVALID_LOG_SETTINGS', 'GRANULE_LOG_FORMAT: expected json or text, got "pretty"'),
    );
    expect(() => readLogSettings({ GRANULE_LOG_LEVEL: 'loud' }, false)).toThrow(
      /GRANULE_LOG_LEVEL: expected one of fatal, error, warn, info, debug, trace, got "loud"/,
    );
  });
});
