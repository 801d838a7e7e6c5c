import { GranuleError } from '@granule/core';

/**
 * - `SECRETS_BAD_KEY`: a key variable does not hold a key of the right kind;
 * - `SECRETS_NO_KEY`: a secret must be sealed or opened here and no key was given;
 * - `SECRETS_CANNOT_OPEN`: a sealed value does not open with this key (sealed for another, or changed).
 */
export type SecretsErrorCode = 'SECRETS_BAD_KEY' | 'SECRETS_NO_KEY' | 'SECRETS_CANNOT_OPEN';

export class SecretsError extends GranuleError<SecretsErrorCode> {}
