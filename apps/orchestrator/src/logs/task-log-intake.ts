import { Inject, Injectable } from '@nestjs/common';
import type { OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { AckPolicy, DeliverPolicy, jetstream } from '@nats-io/jetstream';
import type { JsMsg } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { executionSubjects } from '@granule/contracts';
import type { ExecutionSubjects, StoredTaskLogMessage, TaskLogMessage } from '@granule/contracts';
import { TaskLogStore } from '@granule/event-store';
import { decodeJson, JetStreamConsumers } from '@granule/messaging';
import type { ConsumerRun, Settle } from '@granule/messaging';
import { RepeatedFailureLog } from '@granule/observability';
import type { Logger } from '@granule/service-kit';
import { OrchestratorConfig } from '../orchestrator.config';
import { LOGGER, NATS } from '../orchestrator.tokens';

/** Output messages an orchestrator holds unacknowledged at most. */
const MAX_ACK_PENDING = 256;
/** A message not acknowledged by then is delivered again (to this or another orchestrator). */
const ACK_WAIT_MS = 30_000;
/** Wait before stored records are published again when NATS did not take them. */
const REPUBLISH_MS = 500;
/** Stored records are published for this long at most (then a follower reads them with `runs.logs` at the run's end). */
const PUBLISH_GIVE_UP_MS = 60_000;

/** The problem with a log message's shape, or undefined when it can be stored. */
export function taskLogProblem(m: unknown, subjectNode: string | undefined): string | undefined {
  const x = m as Partial<TaskLogMessage> | null;
  if (typeof x !== 'object' || x === null) return 'not an object';
  if (typeof x.runId !== 'string' || typeof x.key !== 'string' || typeof x.node !== 'string')
    return 'runId, key and node must be strings';
  if (x.node !== subjectNode) return `it names node ${x.node} but came on the subject of ${subjectNode ?? 'no node'}`;
  if (!x.key.endsWith(`@${x.node}`)) return `task ${x.key} is not on node ${x.node}`;
  for (const n of [x.try, x.seq, x.attempt])
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 1_000_000)
      return 'attempt, try and seq must be small whole numbers';
  if (!Array.isArray(x.chunks)) return 'chunks must be a list';
  for (const c of x.chunks) {
    if (typeof c !== 'object' || c === null || (c.stream !== 'stdout' && c.stream !== 'stderr'))
      return 'each chunk needs stream stdout or stderr';
    if (typeof c.data !== 'string' || typeof c.at !== 'number') return 'each chunk needs data (text) and at (ms)';
  }
  if (x.cut !== undefined && (typeof x.cut?.droppedBytes !== 'number' || x.cut.droppedBytes < 0))
    return 'cut.droppedBytes must be a number';
  return undefined;
}

/**
 * Stores agents' task output (ADR 0030): the orchestrators share one durable consumer on the
 * LOGS stream (through `JetStreamConsumers`); each message is stored (bounded per try, once however often it comes) and only
 * then acknowledged, so output survives a crash of the agent's connection, of NATS or of an
 * orchestrator. A message is taken only from the subject of the node it names.
 */
@Injectable()
export class TaskLogIntake implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly subjects: ExecutionSubjects;
  private feed?: ConsumerRun;
  private closing = false;
  /** True after a publish of stored output gave up, until one gets through. */
  private publishGaveUp = false;
  private readonly failures: RepeatedFailureLog;

  constructor(
    @Inject(NATS) private readonly nats: NatsConnection,
    @Inject(TaskLogStore) private readonly store: TaskLogStore,
    @Inject(OrchestratorConfig) private readonly config: OrchestratorConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(JetStreamConsumers) private readonly consumers: JetStreamConsumers,
  ) {
    this.subjects = executionSubjects(config.subjectPrefix);
    this.failures = new RepeatedFailureLog(logger, {
      failing: 'could not store task output; it will be delivered again',
      recovered: 'task output is stored again',
      level: 'error',
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    const { stream, consumer } = this.subjects.logs;
    this.feed = await this.consumers.start({
      what: 'task output consumer',
      stream,
      config: {
        durable_name: consumer,
        description: 'Granule orchestrators storing task output',
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        max_ack_pending: MAX_ACK_PENDING,
        ack_wait: nanos(ACK_WAIT_MS),
        max_deliver: -1,
      },
      handle: (msg) => this.handle(msg),
    });
  }

  async onModuleDestroy(): Promise<void> {
    // A publish of stored output that waits for NATS gives up, so the message in hand ends.
    this.closing = true;
    await this.feed?.stop();
  }

  private async handle(msg: JsMsg): Promise<Settle> {
    let message: TaskLogMessage;
    try {
      message = decodeJson<TaskLogMessage>(msg);
    } catch (err) {
      this.logger.error({ err: (err as Error).message }, 'dropping task output that is not valid JSON');
      return 'term';
    }
    const problem = taskLogProblem(message, this.subjects.logs.nodeOf(msg.subject));
    if (problem) {
      this.logger.warn({ subject: msg.subject, problem }, 'dropping task output');
      return 'term';
    }
    let stored;
    try {
      stored = await this.store.append(message, this.config.taskLogLimitBytes);
    } catch (err) {
      this.failures.failed(err, { runId: message.runId });
      return { nak: 1000 };
    }
    this.failures.succeeded();
    if (stored.records.length > 0)
      await this.publishStored({ runId: message.runId, records: stored.records, end: message.end === true });
    return 'ack';
  }

  /**
   * Publishes committed records on the run's stored-logs subject (STORED_LOGS, ADR 0033) before
   * the agent's message is acknowledged, asking again while NATS is away (a restart): the message
   * id is the first record's id, so a publish that got through but whose answer was lost is
   * dropped by the stream the second time. After a minute (no STORED_LOGS stream, say) it gives
   * up: the records are stored, and a follower reads what it missed when the run ends. Once it
   * gave up, it tries each message once, until one gets through, so a missing stream does not
   * hold up storing.
   */
  private async publishStored(body: StoredTaskLogMessage): Promise<void> {
    const js = jetstream(this.nats);
    const payload = JSON.stringify(body);
    const since = Date.now();
    for (let told = false; !this.closing && !this.nats.isClosed();) {
      try {
        await js.publish(this.subjects.storedLogs.forRun(body.runId), payload, { msgID: body.records[0].id });
        if (told || this.publishGaveUp)
          this.logger.info({ runId: body.runId }, 'stored task output is published again');
        this.publishGaveUp = false;
        return;
      } catch (err) {
        if (this.publishGaveUp) return;
        if (!told)
          this.logger.warn(
            { err: (err as Error).message, runId: body.runId },
            'could not publish stored task output; asking again',
          );
        told = true;
        if (Date.now() - since > PUBLISH_GIVE_UP_MS) {
          this.publishGaveUp = true;
          this.logger.error(
            { runId: body.runId, firstRecord: body.records[0].id },
            "stored task output not published (followers read it at the run's end); each next message is tried once until one gets through",
          );
          return;
        }
        await new Promise((r) => setTimeout(r, REPUBLISH_MS).unref());
      }
    }
  }
}
