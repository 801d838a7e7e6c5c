import type { JetStreamClient } from '@nats-io/jetstream';
import { executionSubjects } from '@granule/contracts';
import type { TaskDispatchMessage } from '@granule/contracts';
import { publishJson } from '@granule/messaging';
import type { Dispatcher } from '@granule/run-coordination';

/** Publishes a dispatch to the node's subject; the dispatch id is the JetStream message id, so a resend is dropped. */
export class JetStreamDispatcher implements Dispatcher {
  private readonly subjects;

  constructor(
    private readonly js: JetStreamClient,
    prefix: string,
  ) {
    this.subjects = executionSubjects(prefix);
  }

  async dispatch(message: TaskDispatchMessage): Promise<void> {
    await publishJson(this.js, this.subjects.dispatch.forNode(message.node), message, message.dispatchId);
  }
}
