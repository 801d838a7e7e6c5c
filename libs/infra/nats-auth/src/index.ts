export { NatsAuthError, type NatsAuthErrorCode } from './nats-auth.errors';
export {
  TrustStore,
  statusAt,
  type IdentityStatus,
  type IssuedCredentials,
  type IssuedIdentity,
  type IssueRequest,
} from './trust-store';
export { readCredentials, type NatsCredentials } from './credentials';
