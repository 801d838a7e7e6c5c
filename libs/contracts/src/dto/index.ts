import 'reflect-metadata';

export * from './deployment-commands.dto';
export * from './config-store.dto';
export * from './config-store.requests';
export { validatePayload } from './validate-payload';
export { Optional } from './bounds';
