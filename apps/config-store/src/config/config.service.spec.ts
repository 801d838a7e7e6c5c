import { generateSecretsKeyPair } from '@granule/secrets';
import { ConfigError } from '@granule/service-kit';
import { loadConfigStoreConfig } from './config.service';

describe('loadConfigStoreConfig', () => {
  it('defaults - local PostgreSQL and NATS, prefix granule, HTTP off without a token', () => {
    expect({ ...loadConfigStoreConfig({}, '/repo') }).toEqual({
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/granule',
      natsUrl: 'nats://127.0.0.1:4222',
      subjectPrefix: 'granule',
      httpHost: '127.0.0.1',
      httpPort: 8410,
      httpMaxStreams: 200,
      httpMaxStreamsPerCaller: 50,
      preinstalledRelease: '/repo/examples/releases/example-release',
      createDatabase: true,
      runMigrations: true,
      healthPort: 8411,
      apiTokens: [],
    });
  });

  it('API callers - the single token is api-token, GRANULE_API_TOKENS names the others; duplicates refused', () => {
    const t = (c: string) => `${c}-0123456789abcdef`;
    expect(
      loadConfigStoreConfig({ GRANULE_API_TOKEN: t('one'), GRANULE_API_TOKENS: ` alice=${t('a')} ,ci=${t('c')}` })
        .apiTokens,
    ).toEqual([
      { name: 'api-token', token: t('one') },
      { name: 'alice', token: t('a') },
      { name: 'ci', token: t('c') },
    ]);
    expect(() => loadConfigStoreConfig({ GRANULE_API_TOKENS: `a=${t('x')},a=${t('y')},b=${t('x')}` })).toThrow(
      "invalid configuration: API tokens: 'a' and 'b' have the same token: give each caller a token of its own; " +
        "API tokens: caller 'a' is given 2 times: each name once",
    );
    expect(() => loadConfigStoreConfig({ GRANULE_API_TOKENS_FILE: '/nonexistent/tokens' })).toThrow(
      'invalid configuration: GRANULE_API_TOKENS_FILE: cannot read /nonexistent/tokens: no such file',
    );
  });

  it('GRANULE_HTTP_HOST - beyond loopback only with a token', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]'])
      expect(loadConfigStoreConfig({ GRANULE_HTTP_HOST: host }).apiTokens).toEqual([]);
    for (const host of ['0.0.0.0', '10.0.0.5', '::', 'config-store.example.com'])
      expect(() => loadConfigStoreConfig({ GRANULE_HTTP_HOST: host })).toThrow(
        `GRANULE_HTTP_HOST: ${host} is beyond loopback and no API token is set`,
      );
    expect(
      loadConfigStoreConfig({ GRANULE_HTTP_HOST: '0.0.0.0', GRANULE_API_TOKENS: 'ci=0123456789abcdef' }).httpHost,
    ).toBe('0.0.0.0');
  });

  it('reads the variables; an empty GRANULE_PREINSTALLED_RELEASE turns the pre-install off', () => {
    const config = loadConfigStoreConfig({
      GRANULE_SUBJECT_PREFIX: 'test.x1',
      GRANULE_HTTP_PORT: '9000',
      GRANULE_API_TOKEN: '0123456789abcdef',
      GRANULE_PREINSTALLED_RELEASE: '',
      GRANULE_RUN_MIGRATIONS: '0',
      GRANULE_NATS_CREDS: '/etc/granule/config-store.creds',
    });
    expect([
      config.subjectPrefix,
      config.httpPort,
      config.apiToken,
      config.preinstalledRelease,
      config.runMigrations,
      config.natsCreds,
    ]).toEqual(['test.x1', 9000, '0123456789abcdef', '', false, '/etc/granule/config-store.creds']);
  });

  it('bad values - every problem named, a URL password hidden, the token length but never the token', () => {
    let error: ConfigError | undefined;
    try {
      loadConfigStoreConfig({
        GRANULE_DATABASE_URL: 'mysql://root:hunter2@x',
        GRANULE_HTTP_PORT: '70000',
        GRANULE_SUBJECT_PREFIX: 'a.>',
        GRANULE_API_TOKEN: 'short-secret',
      });
    } catch (err) {
      error = err as ConfigError;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error?.message.split('; ')).toEqual([
      'invalid configuration: GRANULE_DATABASE_URL: expected a PostgreSQL URL like postgres://user:password@host:5432/granule (got "mysql://root:***@x")',
      'GRANULE_HTTP_PORT: expected a port number from 1 to 65535 (got 70000)',
      'GRANULE_API_TOKEN: expected a secret of at least 16 characters (got 12 characters)',
      'GRANULE_SUBJECT_PREFIX: must be dotted tokens of letters, digits, _ and - (e.g. granule) (got "a.>")',
    ]);
    expect(error?.message).not.toContain('short-secret');
    expect(error?.message).not.toContain('hunter2');
  });

  it('GRANULE_HEALTH_PORT - 0 turns the health server off; anything but a port is refused', () => {
    expect(loadConfigStoreConfig({ GRANULE_HEALTH_PORT: '0' }, '/repo').healthPort).toBe(0);
    expect(() => loadConfigStoreConfig({ GRANULE_HEALTH_PORT: '65536' }, '/repo')).toThrow(
      'GRANULE_HEALTH_PORT: expected a port number from 0 to 65535 (0 turns the health server off) (got 65536)',
    );
    expect(() => loadConfigStoreConfig({ GRANULE_RUN_MIGRATIONS: 'maybe' })).toThrow(
      'GRANULE_RUN_MIGRATIONS: expected 1, 0, true or false (got "maybe")',
    );
  });

  it('GRANULE_HTTP_MAX_STREAMS and _PER_CALLER - whole numbers from 1', () => {
    const config = loadConfigStoreConfig({ GRANULE_HTTP_MAX_STREAMS: '10', GRANULE_HTTP_MAX_STREAMS_PER_CALLER: '3' });
    expect([config.httpMaxStreams, config.httpMaxStreamsPerCaller]).toEqual([10, 3]);
    expect(() =>
      loadConfigStoreConfig({ GRANULE_HTTP_MAX_STREAMS: '0', GRANULE_HTTP_MAX_STREAMS_PER_CALLER: 'many' }),
    ).toThrow(
      'invalid configuration: GRANULE_HTTP_MAX_STREAMS: expected a whole number from 1 (got 0); GRANULE_HTTP_MAX_STREAMS_PER_CALLER: expected a whole number from 1 (got "many")',
    );
  });

  it('GRANULE_SECRETS_PUBLIC_KEY - a curve public key; the private key given by mistake is refused without quoting it', () => {
    const pair = generateSecretsKeyPair();
    expect(loadConfigStoreConfig({ GRANULE_SECRETS_PUBLIC_KEY: pair.publicKey }).secretsPublicKey).toBe(pair.publicKey);
    expect(loadConfigStoreConfig({}).secretsPublicKey).toBeUndefined();
    let message = '';
    try {
      loadConfigStoreConfig({ GRANULE_SECRETS_PUBLIC_KEY: pair.secretKey });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe(
      "invalid configuration: GRANULE_SECRETS_PUBLIC_KEY: expected the public key (X..., 56 characters); this is the private key, which belongs to the orchestrator's GRANULE_SECRETS_KEY only",
    );
  });
});
