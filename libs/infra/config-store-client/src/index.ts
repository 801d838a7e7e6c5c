export { ConfigStoreClient, CONFIG_STORE_HINT, isConfigError } from './config-store.client';
export type { ConfigStoreClientOptions } from './config-store.client';
export { readPluginSourceFiles } from './plugin-source-files';
export type { PluginSourceFiles } from './plugin-source-files';
