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
