import { GranuleError } from '@granule/core';

export type NatsAuthErrorCode =
  | 'TRUST_STORE_MISSING'
  | 'TRUST_STORE_EXISTS'
  | 'TRUST_STORE_INVALID'
  | 'IDENTITY_INVALID'
  | 'IDENTITY_UNKNOWN'
  | 'CREDENTIALS_UNREADABLE'
  | 'CREDENTIALS_INVALID';

/** A trust store or credentials file problem; messages name files and identities, never a key or token. */
export class NatsAuthError extends GranuleError<NatsAuthErrorCode> {}
