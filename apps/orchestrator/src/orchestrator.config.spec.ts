import { hostname } from 'node:os';
import { generateSecretsKeyPair } from '@granule/secrets';
import { configWarnings, loadOrchestratorConfig } from './orchestrator.config';

describe('GRANULE_SECRETS_KEY', () => {
  const pair = generateSecretsKeyPair();

  it('is optional, and kept when it is a curve seed', () => {
    expect(loadOrchestratorConfig({}).secretsKey).toBeUndefined();
    expect(loadOrchestratorConfig({ GRANULE_SECRETS_KEY: pair.secretKey }).secretsKey).toBe(pair.secretKey);
  });

  it('a public key or anything else is refused naming the variable, never quoting the value', () => {
    let message = '';
    try {
      loadOrchestratorConfig({ GRANULE_SECRETS_KEY: pair.publicKey });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(
      /^invalid configuration: GRANULE_SECRETS_KEY: expected the private key \(SX\.\.\., 58 characters\); this is the public key/,
    );
    expect(message).not.toContain(pair.publicKey);
  });
});

describe('GRANULE_INSTANCE_ID', () => {
  it('defaults to a name that stays the same when the process restarts on this host', () => {
    expect(loadOrchestratorConfig({}).instanceId).toBe(`orchestrator-${hostname()}`);
    expect(loadOrchestratorConfig({ GRANULE_INSTANCE_ID: 'granule-orchestrator-5d8f-x2k4' }).instanceId).toBe(
      'granule-orchestrator-5d8f-x2k4',
    );
  });

  it('a name that could not be told apart from the incarnation after it is refused, naming the variable', () => {
    expect(() => loadOrchestratorConfig({ GRANULE_INSTANCE_ID: 'orch#1' })).toThrow(
      /GRANULE_INSTANCE_ID.*letters, digits, "\.", "_" and "-"/,
    );
  });
});

describe('GRANULE_REDIS_URL', () => {
  const warningsFor = (url: string) => configWarnings(loadOrchestratorConfig({ GRANULE_REDIS_URL: url }));

  it('without a password is taken, with a warning that says why it matters and how to set one', () => {
    for (const url of ['redis://127.0.0.1:6379', 'redis://granule@redis.example.com:6379', 'rediss://:@r:6380'])
      expect([url, warningsFor(url)]).toEqual([
        url,
        [
          'GRANULE_REDIS_URL has no password: anyone who reaches Redis can forge node presence and take run leases; ' +
            'give Redis a password (requirepass) or an ACL user, and put it in the URL',
        ],
      ]);
  });

  it('with a password (alone or with an ACL user) warns of nothing', () => {
    for (const url of ['redis://:s3cret@127.0.0.1:6379', 'redis://granule:s3cret@r:6379/1', 'rediss://:p%40ss@r:6380'])
      expect([url, warningsFor(url)]).toEqual([url, []]);
  });
});
