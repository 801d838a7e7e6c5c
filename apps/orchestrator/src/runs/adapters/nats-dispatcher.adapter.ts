import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { executionSubjects } from '@granule/contracts';
import type { TaskDispatchMessage } from '@granule/contracts';
import { signatureHeaders } from '@granule/messaging';
import type { Dispatcher } from '@granule/run-coordination';

const encoder = new TextEncoder();

/**
 * Publishes a dispatch to the node's subject, signed with the orchestrator's credential (the
 * agent runs only what the orchestrator signed); the dispatch id is the JetStream message id, so
 * a resend is dropped.
 */
export class JetStreamDispatcher implements Dispatcher {
  private readonly subjects;

  constructor(
    private readonly nats: NatsConnection,
    private readonly js: JetStreamClient,
    prefix: string,
  ) {
    this.subjects = executionSubjects(prefix);
  }

  async dispatch(message: TaskDispatchMessage): Promise<void> {
    const subject = this.subjects.dispatch.forNode(message.node);
    const data = encoder.encode(JSON.stringify(message));
    const headers = signatureHeaders(this.nats, subject, data);
    await this.js.publish(subject, data, { msgID: message.dispatchId, ...(headers ? { headers } : {}) });
  }
}
