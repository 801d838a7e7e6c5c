import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { executionSubjects } from '@granule/contracts';
import type { TaskDispatchMessage } from '@granule/contracts';
import { signatureHeaders } from '@granule/messaging';
import type { Dispatcher } from '@granule/run-coordination';
import { SecretsError, type SecretOpener } from '@granule/secrets';
import { SECRETS_KEY_VARIABLE, sealedPaths, type ValuePath } from '@granule/task-model';

const encoder = new TextEncoder();

/**
 * Dispatches published and not yet acknowledged by JetStream at most; the others wait their turn.
 * A run of 10,000 nodes makes 10,000 dispatches at once: published all together, the last acks
 * came after the publish timeout on a busy server and were sent again on every tick, adding to
 * the load (npm run bench:fleet-10k). Waiting here, each one's timeout starts when it is sent.
 */
export const DISPATCH_PUBLISH_WINDOW = 256;

/**
 * Publishes a dispatch to the node's subject, signed with the orchestrator's credential (the
 * agent runs only what the orchestrator signed); the dispatch id is the JetStream message id, so
 * a resend is dropped. Sealed secrets in its parameters are opened here, just before the message
 * leaves for the one agent that runs the task (ADR 0023): the coordinators, the event log and
 * every other message only ever hold them sealed.
 */
export class JetStreamDispatcher implements Dispatcher {
  private readonly subjects;
  // A plan's parameters objects live as long as the plan: each is searched for sealed values once.
  private readonly sealedIn = new WeakMap<object, ValuePath[]>();
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  /** The most dispatches that were in flight at once. */
  peakInFlight = 0;

  constructor(
    private readonly nats: NatsConnection,
    private readonly js: JetStreamClient,
    prefix: string,
    private readonly secrets?: SecretOpener,
    /** Output kept per try, told to the agent in every dispatch (ADR 0030). */
    private readonly logLimitBytes?: number,
    private readonly window = DISPATCH_PUBLISH_WINDOW,
  ) {
    this.subjects = executionSubjects(prefix);
  }

  async dispatch(message: TaskDispatchMessage): Promise<void> {
    const subject = this.subjects.dispatch.forNode(message.node);
    const data = encoder.encode(JSON.stringify(this.opened(message)));
    const headers = signatureHeaders(this.nats, subject, data);
    await this.turn();
    try {
      await this.js.publish(subject, data, { msgID: message.dispatchId, ...(headers ? { headers } : {}) });
    } finally {
      this.done();
    }
  }

  /** Resolves once fewer than `window` dispatches are in flight (this one is counted then). */
  private turn(): Promise<void> {
    if (this.inFlight < this.window) {
      this.peakInFlight = Math.max(this.peakInFlight, ++this.inFlight);
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Hands this dispatch's place to the next one waiting. */
  private done(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.inFlight--;
  }
  private opened(dispatch: TaskDispatchMessage): TaskDispatchMessage {
    const message = this.logLimitBytes === undefined ? dispatch : { ...dispatch, logLimitBytes: this.logLimitBytes };
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
