export { ConfigStoreClient, CONFIG_STORE_HINT, isConfigError } from './config-store.client';
export type { ConfigStoreClientOptions } from './config-store.client';
export {
  ConfigStoreRequestError,
  ConfigStoreUnavailableError,
  NatsUnavailableError,
} from './config-store-client.errors';
export { DEFAULT_NATS_URL, NATS_HINT, connectNats } from './nats-connect';
export { readPluginSourceFiles } from './plugin-source-files';
export type { PluginSourceFiles } from './plugin-source-files';
