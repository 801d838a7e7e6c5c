export * from './config-store.dto';
export * from './config-store.views';
export * from './config-store.api';
export { validatePayload } from './validate-payload';
