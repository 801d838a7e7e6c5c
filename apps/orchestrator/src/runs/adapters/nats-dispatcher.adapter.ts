import type { JetStreamClient } from '@nats-io/jetstream';
import { executionSubjects } from '@granule/contracts';
import type { TaskDispatchMessage } from '@granule/contracts';
import { publishJson } from '@granule/messaging';
import type { Dispatcher } from '@granule/run-coordination';
import { SecretsError, type SecretOpener } from '@granule/secrets';
import { SECRETS_KEY_VARIABLE, sealedPaths, type ValuePath } from '@granule/task-model';

/**
 * Publishes a dispatch to the node's subject; the dispatch id is the JetStream message id, so a
 * resend is dropped. Sealed secrets in its parameters are opened here, just before the message
 * leaves for the one agent that runs the task (ADR 0023): the coordinators, the event log and
 * every other message only ever hold them sealed.
 */
export class JetStreamDispatcher implements Dispatcher {
  private readonly subjects;
  // A plan's parameters objects live as long as the plan: each is searched for sealed values once.
  private readonly sealedIn = new WeakMap<object, ValuePath[]>();

  constructor(
    private readonly js: JetStreamClient,
    prefix: string,
    private readonly secrets?: SecretOpener,
  ) {
    this.subjects = executionSubjects(prefix);
  }

  async dispatch(message: TaskDispatchMessage): Promise<void> {
    await publishJson(this.js, this.subjects.dispatch.forNode(message.node), this.opened(message), message.dispatchId);
  }

  private opened(message: TaskDispatchMessage): TaskDispatchMessage {
    let paths = this.sealedIn.get(message.parameters);
    if (paths === undefined) {
      paths = sealedPaths(message.parameters);
      this.sealedIn.set(message.parameters, paths);
    }
    if (paths.length === 0) return message;
    if (!this.secrets)
      throw new SecretsError(
        'SECRETS_NO_KEY',
        `task ${message.key} has sealed parameters and this orchestrator has no ${SECRETS_KEY_VARIABLE} to open them`,
      );
    const { value, paths: opened } = this.secrets.openTree(message.parameters);
    return { ...message, parameters: value, secretPaths: opened };
  }
}
