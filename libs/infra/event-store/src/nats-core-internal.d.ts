// @nats-io/transport-node's types re-export `@nats-io/nats-core/internal`, a subpath only
// `exports` maps; with this repo's `moduleResolution: node` it would not resolve and the
// package would appear to export nothing. Point the subpath at the file it maps to.
declare module '@nats-io/nats-core/internal' {
  export * from '@nats-io/nats-core/lib/internal_mod';
}
