import { GranuleError } from '@granule/core';

/** NATS is not reachable at the configured URL. */
export class NatsUnavailableError extends GranuleError<'NATS_UNAVAILABLE'> {}

/** Nobody answered on the config-store's subjects, or the answer took too long. */
export class ConfigStoreUnavailableError extends GranuleError<'CONFIG_STORE_UNAVAILABLE'> {}

/** The config-store refused a request; `code` is the reply's (`CONFIG_NOT_FOUND`, `CONFIG_NO_RELEASE`, ...). */
export class ConfigStoreRequestError extends GranuleError {}
