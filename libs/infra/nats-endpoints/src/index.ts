/**
 * The NATS side of every service's endpoints, on Nest's microservices transport: one way to
 * declare a request/reply endpoint (`@MessagePattern` and `@Allow(roles)` on a controller), one
 * envelope, one error mapping, the caller's signed identity. The request helper that talks to
 * these endpoints is in @granule/messaging.
 */
export * from './granule-nats.server';
export * from './caller.guard';
