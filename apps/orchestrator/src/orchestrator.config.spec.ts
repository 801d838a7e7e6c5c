import { hostname } from 'node:os';
import { generateSecretsKeyPair } from '@granule/secrets';
import { loadOrchestratorConfig } from './orchestrator.config';

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
