/**
 * Shared messaging adapters: NATS and Redis connections with operator-readable errors, the
 * JetStream execution streams and agent consumers of `executionSubjects(prefix)`, typed JSON
 * publish/decode helpers, and `JetStreamConsumers`, the one way a service consumes JetStream.
 */
export { NatsRefusedError, connectNats, identityOf, splitUrlCredentials } from './nats-connection';
export type { ConnectNatsOptions, NatsConnectionSettings } from './nats-connection';
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
export { CONSUMER_RESTART_MS, JetStreamConsumers } from './jetstream-consumers';
export type {
  BatchConsumerSpec,
  ConsumerLogger,
  ConsumerRun,
  ConsumerSpec,
  MessageConsumerSpec,
  Settle,
} from './jetstream-consumers';
export {
  JetStreamSetupError,
  MessageDecodeError,
  NatsUnreachableError,
  RedisUnreachableError,
  redactUrl,
} from './messaging.errors';
export { startPrivateNats, startPrivateRedis } from './testing/private-servers';
export type { PrivateServer } from './testing/private-servers';
export { connectTestNats, testRedis, testServices, testServicesEnv, testServicesFile } from './testing/test-services';
export type { TestServices } from './testing/test-services';
export { waitUntil } from './testing/eventually';
export { errorReply, isReply, okReply, RemoteError, toReplyError, unwrapReply } from './nats-reply';
export {
  NatsPermissionError,
  onPermissionViolation,
  permissionRefused,
  permissionViolationIn,
} from './nats-permission-errors';
export { request, SERVICES, ServiceUnavailableError, signatureHeaders, signRequestsOn } from './nats-request';
export type { RequestOptions, RequestSigner, ServiceRef, ServiceUnavailableCode } from './nats-request';
export { MAX_REPLY_CHUNKS, encodeChunks, parseRequestJson } from './nats-payload';
export { ANONYMOUS, CallerRefusedError, CallerVerifier, allowedCaller } from './caller-identity';
export type { Caller } from './caller-identity';
export {
  INPUTS_BUCKET_SETTINGS,
  StoredInputs,
  StoredInputsError,
  ensureInputsBucket,
  inputsBucket,
  inputsDigest,
  objectStoreOpener,
} from './stored-inputs';
export type { StoredInputsCode } from './stored-inputs';
