import { errors, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { executionSubjects } from '@granule/contracts';
import { okReply } from '@granule/messaging';
import type { IncarnationProbe, LeaseHolder } from './run-lease.adapter';

/**
 * This process answers on its incarnation's subject for as long as its NATS connection lives,
 * and asks there about earlier incarnations. "No responders" means the server holds no
 * subscription of that incarnation: its connection is closed, which a process that was killed
 * or exited gets at once from its kernel. A timeout or any other failure (a hung process, NATS
 * unreachable from here) proves nothing: the lease then lapses as it would without this.
 *
 * It answers the one reply envelope, its result naming who answers (`IncarnationAnswer`).
 */
/** What an incarnation answers about itself (the `result` of its ok reply). */
export interface IncarnationAnswer {
  replica: string;
  incarnation: string;
}

export class NatsIncarnationBeacon implements IncarnationProbe {
  private sub?: Subscription;

  constructor(
    private readonly nc: NatsConnection,
    private readonly prefix: string,
    private readonly holder: LeaseHolder,
    private readonly timeoutMs = 500,
  ) {}

  private subject(incarnation: string): string {
    return executionSubjects(this.prefix).orchestrators.incarnation(incarnation);
  }

  /** Starts answering (before this process takes any lease), until the connection closes. */
  start(): void {
    if (this.sub) return;
    const result: IncarnationAnswer = { replica: this.holder.replica, incarnation: this.holder.incarnation };
    const answer = JSON.stringify(okReply(result));
    this.sub = this.nc.subscribe(this.subject(this.holder.incarnation), {
      callback: (err, msg) => {
        if (!err) msg.respond(answer);
      },
    });
  }

  async isGone(incarnation: string): Promise<boolean> {
    if (incarnation === this.holder.incarnation) return false;
    try {
      // Any answer proves the process alive, whatever its body: the envelope, or the bare
      // `IncarnationAnswer` a release before the envelope sends during a rolling upgrade.
      await this.nc.request(this.subject(incarnation), '', { timeout: this.timeoutMs });
      return false;
    } catch (err) {
      return err instanceof errors.NoRespondersError || (err instanceof errors.RequestError && err.isNoResponders());
    }
  }
}
