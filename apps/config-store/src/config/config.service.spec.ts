import { ConfigEnvironmentError, ConfigService } from './config.service';

describe('ConfigService', () => {
  it('defaults - local PostgreSQL and NATS, prefix granule, HTTP off without a token', () => {
    const { config } = ConfigService.fromEnvironment({}, '/repo');
    expect(config).toEqual({
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/granule',
      natsUrl: 'nats://127.0.0.1:4222',
      subjectPrefix: 'granule',
      httpHost: '127.0.0.1',
      httpPort: 8410,
      preinstalledRelease: '/repo/examples/releases/example-release',
      createDatabase: true,
      runMigrations: true,
      healthPort: 8411,
    });
  });

  it('reads the variables; an empty GRANULE_PREINSTALLED_RELEASE turns the pre-install off', () => {
    const { config } = ConfigService.fromEnvironment({
      GRANULE_SUBJECT_PREFIX: 'test.x1',
      GRANULE_HTTP_PORT: '9000',
      GRANULE_API_TOKEN: '0123456789abcdef',
      GRANULE_PREINSTALLED_RELEASE: '',
      GRANULE_MIGRATIONS_RUN: 'false',
    });
    expect([
      config.subjectPrefix,
      config.httpPort,
      config.apiToken,
      config.preinstalledRelease,
      config.runMigrations,
    ]).toEqual(['test.x1', 9000, '0123456789abcdef', undefined, false]);
  });

  it('bad values - every problem on its own line, the token length but never the token', () => {
    let error: ConfigEnvironmentError | undefined;
    try {
      ConfigService.fromEnvironment({
        GRANULE_DATABASE_URL: 'mysql://x',
        GRANULE_HTTP_PORT: '70000',
        GRANULE_SUBJECT_PREFIX: 'a.>',
        GRANULE_API_TOKEN: 'short-secret',
      });
    } catch (err) {
      error = err as ConfigEnvironmentError;
    }
    expect(error?.problems).toEqual([
      'GRANULE_DATABASE_URL: expected a PostgreSQL URL like postgres://user:password@host:5432/granule, got "mysql://x"',
      'GRANULE_SUBJECT_PREFIX: expected dotted subject tokens of letters, digits, _ and - (no wildcards), like granule or test.abc, got "a.>"',
      'GRANULE_HTTP_PORT: expected a port number from 1 to 65535, got "70000"',
      'GRANULE_API_TOKEN: expected a secret of at least 16 characters, got 12 characters',
    ]);
  });

  it('GRANULE_HEALTH_PORT - 0 turns the health server off; anything but a port is refused', () => {
    expect(ConfigService.fromEnvironment({ GRANULE_HEALTH_PORT: '0' }, '/repo').config.healthPort).toBe(0);
    expect(() => ConfigService.fromEnvironment({ GRANULE_HEALTH_PORT: '65536' }, '/repo')).toThrow(
      'GRANULE_HEALTH_PORT: expected a port number from 0 to 65535 (0 turns the health server off), got "65536"',
    );
  });

  it('GRANULE_RUN_MIGRATIONS, the name the other services read, wins over GRANULE_MIGRATIONS_RUN', () => {
    const run = (env: Record<string, string>) =>
      ConfigService.fromEnvironment({ GRANULE_PREINSTALLED_RELEASE: '', ...env }).config.runMigrations;
    expect([
      run({}),
      run({ GRANULE_MIGRATIONS_RUN: 'false' }),
      run({ GRANULE_RUN_MIGRATIONS: '0' }),
      run({ GRANULE_MIGRATIONS_RUN: 'false', GRANULE_RUN_MIGRATIONS: '1' }),
    ]).toEqual([true, false, false, true]);
    expect(() => run({ GRANULE_RUN_MIGRATIONS: 'yes' })).toThrow(
      'GRANULE_RUN_MIGRATIONS: expected 1, 0, true or false, got "yes"',
    );
  });
});
