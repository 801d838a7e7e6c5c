export { NatsAuthError, type NatsAuthErrorCode } from './nats-auth.errors';
export {
  TrustStore,
  statusAt,
  type IdentityStatus,
  type IssuedCredentials,
  type IssuedIdentity,
  type IssueRequest,
} from './trust-store';
export { readCredentials, splitCreds, type NatsCredentials } from './credentials';
export {
  IDENTITY_HEADER,
  SIGNATURE_HEADER,
  issuersOf,
  signMessage,
  verifyMessage,
  type SignedHeaders,
  type TrustedIssuers,
  type VerifiedIdentity,
} from './signed-requests';
