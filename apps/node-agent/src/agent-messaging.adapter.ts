import { Inject, Injectable } from '@nestjs/common';
import {
  executionSubjects,
  type AgentRegistration,
  type AgentRegistered,
  type DispatchRefusedAlert,
  type ExecutionSubjects,
  type TaskLogMessage,
  type TaskOutputMessage,
  type TaskProgressMessage,
} from '@granule/contracts';
import { ReconnectWaits, publishJson, request, SERVICES, signatureHeaders } from '@granule/messaging';
import {
  jetstream,
  type Consumer,
  type ConsumerMessages,
  type JetStreamClient,
  type JsMsg,
  type PubAck,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { AGENT_LOGGER, type AgentLogger } from './agent-logger';
import { NATS_CONNECTION } from './agent.tokens';
import { AGENT_CONFIG } from './config/agent-config.provider';
import type { AgentConfig } from './config/agent-config';

const REGISTER_TIMEOUT_MS = 3000;
/** How often a missing dispatch consumer is looked for again. */
const CONSUMER_WAIT_MS = 1000;
/** Output no stream takes (NATS up, no LOGS stream) is given up after this. */
const NO_LOG_STREAM_GIVE_UP_MS = 30_000;
/** A progress message NATS did not take is sent again after this, or as soon as the connection is back. */
const PUBLISH_RETRY_MS = 2000;

/**
 * The agent's side of NATS: its JetStream setup, the dispatch consumer, progress messages on
 * RESULTS, live output on core NATS and the registration request.
 */
@Injectable()
export class AgentMessaging {
  readonly subjects: ExecutionSubjects;
  private readonly js: JetStreamClient;
  private messages?: ConsumerMessages;
  private closing = false;
  /** Called when the dispatch consumer disappears (deleted, its stream gone). */
  onConsumerLost?: () => void;
  private readonly retryWaits: ReconnectWaits;
  /** Until then task output is not sent: no stream took it lately (see `publishLog`). */
  private noLogStreamUntil = 0;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(AGENT_CONFIG) private readonly config: AgentConfig,
    @Inject(AGENT_LOGGER) private readonly log: AgentLogger,
  ) {
    this.subjects = executionSubjects(config.subjectPrefix);
    this.js = jetstream(nc);
    this.retryWaits = new ReconnectWaits(nc);
  }

  /**
   * Waits until this node's dispatch consumer exists. The control plane makes the streams and
   * the consumer (the orchestrator at start and when the agent registers): an agent may read its
   * own dispatches but create or change nothing on JetStream. Said once while it waits.
   */
  async waitForConsumer(): Promise<Consumer> {
    const name = this.subjects.dispatch.consumerFor(this.config.nodeUid);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.js.consumers.get(this.subjects.dispatch.stream, name);
      } catch (err) {
        if (this.closing) throw err;
        if (attempt === 1)
          this.log.info(
            { consumer: name, err: (err as Error).message },
            "waiting for this node's dispatch consumer (the orchestrator creates it when the agent registers)",
          );
        await this.retryWaits.wait(CONSUMER_WAIT_MS);
      }
    }
  }

  /**
   * Feeds this node's dispatches to `handle`, one at a time (the next is pulled once `handle`
   * resolves), until `stopConsuming`. Messages that arrive while stopping are handed back (nak).
   */
  async consume(handle: (msg: JsMsg) => Promise<void>): Promise<void> {
    const consumer = await this.waitForConsumer();
    const messages = await consumer.consume({ max_messages: 1 });
    this.messages = messages;
    if (this.closing) await messages.close();
    void this.watchStatus(messages);
    for await (const msg of messages) {
      if (this.closing) {
        msg.nak();
        continue;
      }
      await handle(msg);
    }
  }

  /** Stops pulling dispatches; `consume` returns after the message in hand is handled. */
  async stopConsuming(): Promise<void> {
    this.closing = true;
    await this.messages?.close();
  }

  /**
   * Publishes a progress message to `<p>.result.<run>` with `msgID`, retrying until the stream
   * acknowledges it or `isStopping()` turns true (then it throws: the dispatch stays unacked and
   * is answered from the journal when it comes back). Retries come every `PUBLISH_RETRY_MS`, and at
   * once when the client reconnects after an outage (the msgID makes a resend harmless).
   */
  async publishProgress(
    message: TaskProgressMessage,
    msgID: string,
    isStopping: () => boolean = () => false,
  ): Promise<PubAck> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await publishJson(
          this.js,
          this.subjects.results.forTask(message.runId, this.config.nodeUid),
          message,
          msgID,
        );
      } catch (err) {
        if (isStopping() || this.nc.isClosed()) throw err;
        if (attempt === 1 || attempt % 30 === 0) {
          this.log.warn(
            { runId: message.runId, key: message.key, err: (err as Error).message, attempt },
            `cannot publish the ${message.status} result yet; retrying every ${PUBLISH_RETRY_MS / 1000} s and when the NATS connection is back`,
          );
        }
        await this.retryWaits.wait(PUBLISH_RETRY_MS);
      }
    }
  }

  /**
   * Publishes a task log message to `<p>.log.<run>.<node>` (the LOGS stream) with `msgID`, retrying
   * like `publishProgress` until the stream stored it or `isStopping()` turns true.
   */
  async publishLog(message: TaskLogMessage, msgID: string, isStopping: () => boolean = () => false): Promise<void> {
    if (Date.now() < this.noLogStreamUntil)
      throw new Error(`no JetStream stream takes task output (${this.subjects.logs.stream}); output is not kept`);
    let noStreamSince: number | undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        await publishJson(this.js, this.subjects.logs.forTask(message.runId, this.config.nodeUid), message, msgID);
        return;
      } catch (err) {
        if (isStopping() || this.nc.isClosed()) throw err;
        // NATS is up but no stream takes the subject (orchestrators older than the agent): the
        // output is given up after a while, so the task's outcome is not held back for it.
        if ((err as Error).name === 'JetStreamNotEnabled') {
          noStreamSince ??= Date.now();
          if (Date.now() - noStreamSince >= NO_LOG_STREAM_GIVE_UP_MS) {
            // Asked again only after a while: the next tasks' outcomes are not held back either.
            this.noLogStreamUntil = Date.now() + NO_LOG_STREAM_GIVE_UP_MS * 2;
            throw new Error(
              `no JetStream stream takes ${this.subjects.logs.forTask(message.runId, this.config.nodeUid)} (${this.subjects.logs.stream}): the orchestrators create it at start; update and start them`,
              { cause: err },
            );
          }
        } else noStreamSince = undefined;
        if (attempt === 1 || attempt % 30 === 0) {
          this.log.warn(
            { runId: message.runId, key: message.key, err: (err as Error).message, attempt },
            `cannot publish task output yet; retrying every ${PUBLISH_RETRY_MS / 1000} s and when the NATS connection is back`,
          );
        }
        await this.retryWaits.wait(PUBLISH_RETRY_MS);
      }
    }
  }

  /**
   * Acknowledges a delivery by its reply subject (one made by an earlier agent process); the
   * server removes that dispatch from the work queue and frees the consumer's ack slot.
   */
  acknowledge(ackSubject: string): void {
    this.nc.publish(ackSubject, '+ACK');
  }

  /** Reports a dispatch this agent refused to run (core NATS, best effort: the agent's log has it too). */
  publishAlert(alert: DispatchRefusedAlert): void {
    try {
      // Signed like a request: the orchestrator records only alerts an agent's credential signed.
      const subject = this.subjects.agents.alertFrom(this.config.nodeUid);
      const data = new TextEncoder().encode(JSON.stringify(alert));
      const headers = signatureHeaders(this.nc, subject, data);
      this.nc.publish(subject, data, headers ? { headers } : {});
    } catch {
      // Logged by the caller.
    }
  }

  /** Live output on `<p>.output.<run>.<node>` (core NATS, best effort: never throws). */
  publishOutput(message: TaskOutputMessage): void {
    try {
      this.nc.publish(this.subjects.output.forTask(message.runId, message.node), JSON.stringify(message));
    } catch {
      // Output is best effort; the outcome carries the tail.
    }
  }

  /** Asks an orchestrator to accept this agent; throws when none answers in time. */
  /** Registers with an orchestrator; a refusal is thrown with its code (messaging's `request`). */
  register(registration: AgentRegistration): Promise<AgentRegistered> {
    return request<AgentRegistered>(this.nc, SERVICES.orchestrator, this.subjects.agents.register, registration, {
      timeoutMs: REGISTER_TIMEOUT_MS,
    });
  }

  /** Flushes what was published and closes the connection. */
  async drain(): Promise<void> {
    if (!this.nc.isClosed()) await this.nc.drain();
  }

  private async watchStatus(messages: ConsumerMessages): Promise<void> {
    for await (const status of messages.status()) {
      if (
        status.type === 'consumer_deleted' ||
        status.type === 'consumer_not_found' ||
        status.type === 'stream_not_found'
      ) {
        // The orchestrator makes it again when the agent registers again (see AgentLifecycle).
        this.log.warn({ status }, 'the dispatch consumer or stream is gone; registering again');
        this.onConsumerLost?.();
      } else if (status.type === 'heartbeats_missed') {
        this.log.warn({ count: status.count }, 'missed JetStream heartbeats on the dispatch consumer');
      }
    }
  }
}
