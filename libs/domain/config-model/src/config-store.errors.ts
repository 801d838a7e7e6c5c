import { GranuleError } from '@granule/core';

/**
 * Stable codes of the config-store's refusals. Transports map them at their edge
 * (HTTP: 404 / 409; NATS: the reply's `error.code`).
 */
export type ConfigStoreErrorCode =
  | 'CONFIG_NOT_FOUND'
  | 'CONFIG_ALREADY_EXISTS'
  | 'CONFIG_IN_USE'
  | 'CONFIG_NO_RELEASE'
  | 'CONFIG_WRONG_KIND'
  | 'CONFIG_INCOMPATIBLE'
  | 'CONFIG_AMBIGUOUS';

/** A request the config-store refuses for a reason other than malformed input. */
export class ConfigStoreError extends GranuleError<ConfigStoreErrorCode> {}

/** The message of seed 003's no-release case: says how to install one. */
export const NO_RELEASE_MESSAGE = 'no release is installed: install one with granule release install <DIR|FILE.tar.gz>';

/** Creating an environment with no release installed (seed 003). */
export function noReleaseInstalled(): ConfigStoreError {
  return new ConfigStoreError('CONFIG_NO_RELEASE', NO_RELEASE_MESSAGE);
}

/** `<what> '<ref>' does not exist` plus what there is, so the user can pick. */
export function notFound(what: string, ref: string, known: readonly string[] = []): ConfigStoreError {
  const hint = known.length > 0 ? ` (known: ${known.join(', ')})` : '';
  return new ConfigStoreError('CONFIG_NOT_FOUND', `${what} '${ref}' does not exist${hint}`);
}
