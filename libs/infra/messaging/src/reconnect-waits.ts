import type { NatsConnection } from '@nats-io/transport-node';

/**
 * Retry waits that end early when a NATS connection is back after an outage: what waits for its
 * next attempt (a result to publish, say) tries again at the reconnection instead of at the end
 * of its own interval.
 */
export class ReconnectWaits {
  private readonly waiting = new Set<(how: 'reconnected') => void>();

  constructor(nc: Pick<NatsConnection, 'status'>) {
    void this.watch(nc);
  }

  /** Resolves `elapsed` after `ms`, or `reconnected` as soon as the client reconnects. */
  wait(ms: number): Promise<'elapsed' | 'reconnected'> {
    return new Promise((resolve) => {
      const wake = (how: 'elapsed' | 'reconnected'): void => {
        clearTimeout(timer);
        this.waiting.delete(wake);
        resolve(how);
      };
      const timer = setTimeout(() => wake('elapsed'), ms);
      this.waiting.add(wake);
    });
  }

  // Ends with the connection (its status iterator closes).
  private async watch(nc: Pick<NatsConnection, 'status'>): Promise<void> {
    for await (const status of nc.status()) {
      if (status.type === 'reconnect') for (const wake of [...this.waiting]) wake('reconnected');
    }
  }
}
