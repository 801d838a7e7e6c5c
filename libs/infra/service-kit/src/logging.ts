/**
 * The logging part of service-kit alone (no database driver): what the node agent loads, so
 * that its one-file bundle holds no PostgreSQL client or ORM. `@granule/service-kit` exports it too.
 */
export * from './logger';
