export * from './env-config';
export * from './database';
export * from './run-service';
export * from './logger';
export * from './nats-settings';
