/**
 * Shared messaging adapters: NATS and Redis connections with operator-readable errors, the
 * JetStream execution streams and agent consumers of `executionSubjects(prefix)`, and typed
 * JSON publish/decode helpers.
 */
export { connectNats } from './nats-connection';
export type { ConnectNatsOptions } from './nats-connection';
export { connectRedis, describeFailure } from './redis-connection';
export type { ConnectRedisOptions, RedisConnection } from './redis-connection';
export {
  AGENT_CONSUMER_SETTINGS,
  EXECUTION_STREAM_SETTINGS,
  agentConsumerConfig,
  deleteExecutionStreams,
  ensureAgentConsumer,
  ensureExecutionStreams,
  executionStreamConfigs,
} from './execution-streams';
export { decodeJson, publishJson } from './json-messages';
export { ReconnectWaits } from './reconnect-waits';
export {
  JetStreamSetupError,
  MessageDecodeError,
  NatsUnreachableError,
  RedisUnreachableError,
  redactUrl,
} from './messaging.errors';
export { startPrivateNats, startPrivateRedis } from './testing/private-servers';
export type { PrivateServer } from './testing/private-servers';
