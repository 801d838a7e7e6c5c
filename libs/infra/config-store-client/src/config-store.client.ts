import { RequestError, TimeoutError } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { GranuleError, InvalidInputError } from '@granule/core';
import { DEFAULT_SUBJECT_PREFIX, configSubject } from '@granule/contracts';
import type { ConfigOperation, ConfigReply, ConfigStoreReplies, ConfigStoreRequest } from '@granule/contracts';
import { ConfigStoreRequestError, ConfigStoreUnavailableError } from './config-store-client.errors';

export interface ConfigStoreClientOptions {
  /** First subject token; default `granule`. */
  prefix?: string;
  /** Per-request timeout; default 10 s (installing a large plugin validates it first). */
  timeoutMs?: number;
}

/** What to tell the user when the config-store does not answer. */
export const CONFIG_STORE_HINT = 'start it with npm run start:config-store';

/**
 * Typed request/reply client of the config-store (NATS). Refusals come back as
 * `InvalidInputError` (with every diagnostic) or `ConfigStoreRequestError` (with the reply's
 * code); no answer is `ConfigStoreUnavailableError`.
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

  async request<K extends ConfigOperation>(
    operation: K,
    payload: ConfigStoreRequest<K>,
  ): Promise<ConfigStoreReplies[K]> {
    const subject = configSubject(this.prefix, operation);
    let text: string;
    try {
      const msg = await this.nc.request(subject, JSON.stringify(payload), { timeout: this.timeoutMs });
      text = msg.string();
    } catch (err) {
      const where = `${this.prefix}.config.*`;
      if (err instanceof RequestError && err.isNoResponders()) {
        throw new ConfigStoreUnavailableError(
          'CONFIG_STORE_UNAVAILABLE',
          `config-store did not answer on ${where}: ${CONFIG_STORE_HINT}`,
          { cause: err },
        );
      }
      if (err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError)) {
        throw new ConfigStoreUnavailableError(
          'CONFIG_STORE_UNAVAILABLE',
          `config-store did not answer on ${where} within ${this.timeoutMs / 1000} s: is it running and connected to the same NATS? (${CONFIG_STORE_HINT})`,
          { cause: err },
        );
      }
      throw err;
    }
    const reply = JSON.parse(text) as ConfigReply<ConfigStoreReplies[K]>;
    if (reply.ok) return reply.data;
    if (reply.error.diagnostics && reply.error.diagnostics.length > 0)
      throw new InvalidInputError(reply.error.diagnostics);
    throw new ConfigStoreRequestError(reply.error.code, reply.error.message);
  }
}

/** True for a refusal with this code (e.g. `CONFIG_NO_RELEASE`). */
export function isConfigError(err: unknown, code: string): boolean {
  return err instanceof GranuleError && err.code === code;
}
