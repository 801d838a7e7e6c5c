/**
 * The configuration part of service-kit alone (no database driver): what the CLI and the agent
 * load, where start-up time matters. `@granule/service-kit` exports it too.
 */
export * from './env-config';
export * from './nats-settings';
