import type { NatsConnection } from '@nats-io/transport-node';
import { GranuleError } from '@granule/core';
import { DEFAULT_SUBJECT_PREFIX, configSubject } from '@granule/contracts';
import type { ConfigOperation, ConfigStoreReplies, ConfigStoreRequest } from '@granule/contracts';
import { request, SERVICES } from '@granule/messaging';

export interface ConfigStoreClientOptions {
  /** First subject token; default `granule`. */
  prefix?: string;
  /** Per-request timeout; default 10 s (installing a large plugin validates it first). */
  timeoutMs?: number;
}

/** What to tell the user when the config-store does not answer. */
export const CONFIG_STORE_HINT = SERVICES.configStore.hint;

/**
 * Typed request/reply client of the config-store (NATS). Refusals come back as
 * `InvalidInputError` (with every diagnostic) or messaging's `RemoteError` (with the reply's
 * code); no answer is `ServiceUnavailableError` (`CONFIG_STORE_UNAVAILABLE`, `_TIMEOUT`).
 */
export class ConfigStoreClient {
  readonly prefix: string;
  private readonly timeoutMs: number;

  constructor(
    private readonly nc: NatsConnection,
    options: ConfigStoreClientOptions = {},
  ) {
    this.prefix = options.prefix ?? DEFAULT_SUBJECT_PREFIX;
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  request<K extends ConfigOperation>(operation: K, payload: ConfigStoreRequest<K>): Promise<ConfigStoreReplies[K]> {
    return request<ConfigStoreReplies[K]>(
      this.nc,
      SERVICES.configStore,
      configSubject(this.prefix, operation),
      payload,
      { timeoutMs: this.timeoutMs },
    );
  }
}

/** True for a refusal with this code (e.g. `CONFIG_NO_RELEASE`). */
export function isConfigError(err: unknown, code: string): boolean {
  return err instanceof GranuleError && err.code === code;
}
