import type { EventBatchHandler, EventStorePort, Position, StoredEvent, SubscribeOptions, Subscription } from './event-store.types';
import { START_POSITION } from './position';

const DEFAULT_POLL_INTERVAL_MS = 200;
const DEFAULT_BATCH_SIZE = 500;

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const wake = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', wake);
      resolve();
    };
    const timer = setTimeout(wake, ms);
    signal.addEventListener('abort', wake, { once: true });
  });
}

/**
 * Runs a checkpointed consumer of the commit-ordered log: read a batch after the stored
 * position, hand it to `handler`, store the position of its last event, repeat. Delivery is
 * at-least-once: a crash between the handler and the checkpoint re-delivers that batch.
 */
export function startPollingSubscription(
  store: Pick<EventStorePort, 'readAll' | 'readCheckpoint' | 'storeCheckpoint'>,
  consumer: string,
  handler: EventBatchHandler,
  options: SubscribeOptions = {},
): Subscription {
  const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const stopping = new AbortController();
  const external = options.signal;
  const onExternalAbort = () => stopping.abort();
  if (external?.aborted) stopping.abort();
  external?.addEventListener('abort', onExternalAbort, { once: true });

  const loop = async (): Promise<void> => {
    let position: Position | null = null;
    try {
      while (!stopping.signal.aborted) {
        try {
          position ??= (await store.readCheckpoint(consumer)) ?? START_POSITION;
          const events: StoredEvent[] = await store.readAll({ after: position, maxCount: batchSize });
          if (events.length > 0) {
            await handler(events);
            const last = events[events.length - 1];
            const next = { transactionId: last.transactionId, globalPosition: last.globalPosition };
            await store.storeCheckpoint(consumer, next);
            position = next;
            // A full batch means more is probably waiting: read on without pausing.
            if (events.length === batchSize) continue;
          }
        } catch (error) {
          if (!options.onError) throw error;
          options.onError(error);
        }
        await pause(pollIntervalMs, stopping.signal);
      }
    } finally {
      external?.removeEventListener('abort', onExternalAbort);
    }
  };

  const done = loop();
  return {
    done,
    stop: async () => {
      stopping.abort();
      await done.catch(() => undefined);
    },
  };
}
