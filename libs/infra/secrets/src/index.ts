/**
 * Sealing secrets for the installation's key (ADR 0023): NaCl boxes on NATS curve keys
 * (`@nats-io/nkeys`). Which values are secrets, and what sealing does to a tree, is the domain's
 * (`@granule/task-model`'s sensitive-values); this library holds the cipher and the keys.
 */
export * from './secrets.errors';
export {
  SecretOpener,
  SecretSealer,
  generateSecretsKeyPair,
  secretsKeyProblem,
  secretsPublicKeyProblem,
} from './secret-box';
export type { SecretsKeyPair } from './secret-box';
