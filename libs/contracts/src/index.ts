export * from './subjects';
export * from './deployment-commands';
export * from '@granule/run-events';
export * from './agent-messages';
export * from './config-store';
export * from './run-queries';
export * from './nats-permissions';
export * from './reply';
