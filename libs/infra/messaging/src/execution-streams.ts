import { executionSubjects } from '@granule/contracts';
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiError,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type ConsumerInfo,
  type JetStreamManager,
  type StreamConfig,
  type StreamInfo,
} from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { JetStreamSetupError } from './messaging.errors';

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const DAY_MS = 24 * 60 * MINUTE_MS;

/** JetStream error code: a stream of that name exists with a different configuration. */
const STREAM_NAME_IN_USE = 10058;

/** Settings of the execution streams (durations in milliseconds). */
export const EXECUTION_STREAM_SETTINGS = Object.freeze({
  commandsDuplicateWindowMs: 2 * MINUTE_MS,
  dispatchDuplicateWindowMs: 10 * MINUTE_MS,
  resultsDuplicateWindowMs: 10 * MINUTE_MS,
  resultsMaxAgeMs: 7 * DAY_MS,
  logsDuplicateWindowMs: 10 * MINUTE_MS,
  /** Task output no orchestrator has stored for this long is dropped (none runs for a week). */
  logsMaxAgeMs: 7 * DAY_MS,
  /** Task output waiting to be stored, at most (the oldest is dropped beyond it). */
  logsMaxBytes: 4 * 1024 * 1024 * 1024,
  /** The outbox's republishes after a crash (same Nats-Msg-Id, the global position) are dropped within it. */
  eventsDuplicateWindowMs: 10 * MINUTE_MS,
  /** The read spine keeps a day of events: a watch of an older run catches up from the log (ADR 0033). */
  eventsMaxAgeMs: DAY_MS,
  /** At most this much (the oldest is dropped beyond it; readers catch up from the log). */
  eventsMaxBytes: 1024 * 1024 * 1024,
  /** A writer's republish of the same stored records (same Nats-Msg-Id, the first record id) is dropped within it. */
  storedLogsDuplicateWindowMs: 10 * MINUTE_MS,
  /** Stored output is followed from the stream for a day; a reader of an older run reads `runs.logs`. */
  storedLogsMaxAgeMs: DAY_MS,
  /** At most this much (the oldest is dropped beyond it; PostgreSQL keeps the records). */
  storedLogsMaxBytes: 1024 * 1024 * 1024,
});

/** Settings of an agent's dispatch consumer (durations in milliseconds). */
export const AGENT_CONSUMER_SETTINGS = Object.freeze({
  /** The agent extends it with `msg.working()` while a task runs. */
  ackWaitMs: 60 * SECOND_MS,
  /** One task at a time per node. */
  maxAckPending: 1,
  /** A consumer whose agent has not pulled for this long is removed by the server. */
  inactiveThresholdMs: 7 * DAY_MS,
});

type ExecutionStreamConfig = Pick<
  StreamConfig,
  | 'name'
  | 'subjects'
  | 'retention'
  | 'storage'
  | 'duplicate_window'
  | 'max_age'
  | 'num_replicas'
  | 'discard'
  | 'description'
  | 'max_bytes'
>;

/**
 * The execution streams of `prefix`, as `ensureExecutionStreams` creates them:
 * COMMANDS (`<p>.cmd.>`, work queue, 2 min duplicate window), DISPATCH (`<p>.dispatch.>`, work
 * queue, 10 min window: a dispatch is de-duplicated by msgID = dispatchId) and RESULTS
 * (`<p>.result.>`, limits retention, 10 min window, kept 7 days) and LOGS (`<p>.log.>`, work
 * queue, 10 min window, 7 days, 4 GiB) and EVENTS (`<p>.events.>`, the outbox's committed events:
 * limits retention, 10 min window, a day, 1 GiB; ADR 0033) and STORED_LOGS (`<p>.logs.stored.>`, the
 * task output records as the orchestrators stored them: limits retention, 10 min window, a day,
 * 1 GiB; ADR 0033). File storage, one replica.
 */
export function executionStreamConfigs(prefix: string): ExecutionStreamConfig[] {
  const s = executionSubjects(prefix);
  const common = { storage: StorageType.File, num_replicas: 1, discard: DiscardPolicy.Old, max_bytes: -1 };
  return [
    {
      ...common,
      name: s.commands.stream,
      description: 'Granule operator commands (work queue, orchestrators share one consumer)',
      subjects: [s.commands.all],
      retention: RetentionPolicy.Workqueue,
      duplicate_window: nanos(EXECUTION_STREAM_SETTINGS.commandsDuplicateWindowMs),
      max_age: 0,
    },
    {
      ...common,
      name: s.dispatch.stream,
      description: 'Granule task dispatch (work queue, one filtered consumer per agent)',
      subjects: [s.dispatch.all],
      retention: RetentionPolicy.Workqueue,
      duplicate_window: nanos(EXECUTION_STREAM_SETTINGS.dispatchDuplicateWindowMs),
      max_age: 0,
    },
    {
      ...common,
      name: s.results.stream,
      description: 'Granule task progress and results',
      subjects: [s.results.all],
      retention: RetentionPolicy.Limits,
      duplicate_window: nanos(EXECUTION_STREAM_SETTINGS.resultsDuplicateWindowMs),
      max_age: nanos(EXECUTION_STREAM_SETTINGS.resultsMaxAgeMs),
    },
    {
      ...common,
      name: s.logs.stream,
      description: 'Granule task output on its way to the orchestrators, which store it (ADR 0030)',
      subjects: [s.logs.all],
      // Stored output is acknowledged and leaves the stream: PostgreSQL keeps it, with its run.
      retention: RetentionPolicy.Workqueue,
      duplicate_window: nanos(EXECUTION_STREAM_SETTINGS.logsDuplicateWindowMs),
      max_age: nanos(EXECUTION_STREAM_SETTINGS.logsMaxAgeMs),
      max_bytes: EXECUTION_STREAM_SETTINGS.logsMaxBytes,
    },
    {
      ...common,
      name: s.events.stream,
      description: 'Granule committed events in commit order, as the outbox publishes them (the read spine, ADR 0033)',
      subjects: [s.events.all],
      retention: RetentionPolicy.Limits,
      duplicate_window: nanos(EXECUTION_STREAM_SETTINGS.eventsDuplicateWindowMs),
      max_age: nanos(EXECUTION_STREAM_SETTINGS.eventsMaxAgeMs),
      max_bytes: EXECUTION_STREAM_SETTINGS.eventsMaxBytes,
    },
    {
      ...common,
      name: s.storedLogs.stream,
      description: 'Granule task output as the orchestrators stored it, with record ids (ADR 0033)',
      subjects: [s.storedLogs.all],
      retention: RetentionPolicy.Limits,
      duplicate_window: nanos(EXECUTION_STREAM_SETTINGS.storedLogsDuplicateWindowMs),
      max_age: nanos(EXECUTION_STREAM_SETTINGS.storedLogsMaxAgeMs),
      max_bytes: EXECUTION_STREAM_SETTINGS.storedLogsMaxBytes,
    },
  ];
}

/**
 * Creates the execution streams of `prefix`, or updates them to `executionStreamConfigs`
 * when they exist with other settings. Safe to call from every process at every start.
 * Throws `JetStreamSetupError` when JetStream refuses (disabled, or a setting that cannot change).
 */
export async function ensureExecutionStreams(
  nc: NatsConnection | JetStreamManager,
  prefix: string,
): Promise<StreamInfo[]> {
  const jsm = await managerOf(nc);
  const infos: StreamInfo[] = [];
  for (const config of executionStreamConfigs(prefix)) {
    infos.push(await ensureStream(jsm, config));
  }
  return infos;
}

async function ensureStream(jsm: JetStreamManager, config: ExecutionStreamConfig): Promise<StreamInfo> {
  try {
    return await jsm.streams.add(config);
  } catch (err) {
    if (!(err instanceof JetStreamApiError) || err.code !== STREAM_NAME_IN_USE) {
      throw new JetStreamSetupError(`cannot create JetStream stream ${config.name}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }
  try {
    const { name, retention: _retention, storage: _storage, ...updatable } = config;
    return await jsm.streams.update(name, updatable);
  } catch (err) {
    throw new JetStreamSetupError(
      `cannot update JetStream stream ${config.name} to the expected settings: ${(err as Error).message}`,
      { cause: err },
    );
  }
}

/**
 * The dispatch consumer of node `nodeUid`: durable pull consumer `agent-<uid>` on DISPATCH that
 * sees only `<p>.dispatch.<uid>`, explicit acks, one unacknowledged message at a time, 60 s
 * ack wait, one replica, removed after 7 days without a pull.
 */
export function agentConsumerConfig(
  prefix: string,
  nodeUid: string,
): Partial<ConsumerConfig> & { durable_name: string } {
  const s = executionSubjects(prefix);
  return {
    durable_name: s.dispatch.consumerFor(nodeUid),
    description: `Granule node-agent ${nodeUid}`,
    filter_subject: s.dispatch.forNode(nodeUid),
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    max_ack_pending: AGENT_CONSUMER_SETTINGS.maxAckPending,
    ack_wait: nanos(AGENT_CONSUMER_SETTINGS.ackWaitMs),
    // Unlimited: a redelivery is answered from the agent's journal, never run twice.
    max_deliver: -1,
    num_replicas: 1,
    inactive_threshold: nanos(AGENT_CONSUMER_SETTINGS.inactiveThresholdMs),
  };
}

/**
 * Creates (or updates to `agentConsumerConfig`) the dispatch consumer of `nodeUid` and returns
 * its info. The DISPATCH stream must exist (`ensureExecutionStreams`).
 */
export async function ensureAgentConsumer(
  jsm: JetStreamManager,
  prefix: string,
  nodeUid: string,
): Promise<ConsumerInfo> {
  const config = agentConsumerConfig(prefix, nodeUid);
  const stream = executionSubjects(prefix).dispatch.stream;
  try {
    return await jsm.consumers.add(stream, config);
  } catch (err) {
    throw new JetStreamSetupError(
      `cannot create the dispatch consumer ${config.durable_name} on ${stream}: ${(err as Error).message}`,
      { cause: err },
    );
  }
}

/** Deletes the execution streams of `prefix` (and so their consumers) and its inputs bucket; missing ones are skipped. */
export async function deleteExecutionStreams(nc: NatsConnection | JetStreamManager, prefix: string): Promise<void> {
  const jsm = await managerOf(nc);
  // The inputs bucket's stream too (stored-inputs.ts): an object store is a stream `OBJ_<bucket>`.
  const inputs = { name: `OBJ_${executionSubjects(prefix).inputs.bucket}` };
  for (const { name } of [...executionStreamConfigs(prefix), inputs]) {
    await jsm.streams.delete(name).catch((err: unknown) => {
      if (!(err instanceof JetStreamApiError) || err.status !== 404) throw err;
    });
  }
}

async function managerOf(nc: NatsConnection | JetStreamManager): Promise<JetStreamManager> {
  if ('streams' in nc) return nc;
  try {
    return await jetstreamManager(nc);
  } catch (err) {
    throw new JetStreamSetupError(
      `JetStream is not available on this NATS server (run nats-server with -js): ${(err as Error).message}`,
      { cause: err },
    );
  }
}
