import type {
  EventBatchHandler,
  EventStorePort,
  Position,
  StoredEvent,
  SubscribeOptions,
  Subscription,
} from './event-store.types';
import { comparePositions, START_POSITION } from './position';

const DEFAULT_POLL_INTERVAL_MS = 200;
const DEFAULT_BATCH_SIZE = 500;

/**
 * Resolves after `ms`, when `signal` aborts, or `soon` ms after `wake(soon)` if that is earlier.
 */
function pause(ms: number, signal: AbortSignal): { done: Promise<void>; wake: (soon: number) => void } {
  let wake: (soon: number) => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const end = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', end);
      resolve();
    };
    const until = performance.now() + ms;
    let timer = setTimeout(end, ms);
    signal.addEventListener('abort', end, { once: true });
    wake = (soon) => {
      if (performance.now() + soon >= until) return;
      clearTimeout(timer);
      timer = setTimeout(end, Math.max(0, soon));
    };
  });
  return { done, wake };
}

/**
 * Runs a checkpointed consumer of the commit-ordered log: read a batch after the stored
 * position, hand it to `handler`, store the position of its last event, repeat; between reads
 * it waits `pollIntervalMs` or, given `minIntervalMs`, until the store says it appended.
 * Delivery is at-least-once: a crash between the handler and the checkpoint re-delivers that
 * batch.
 */
export function startPollingSubscription(
  store: Pick<EventStorePort, 'readAll' | 'readCheckpoint' | 'storeCheckpoint'> &
    Partial<Pick<EventStorePort, 'onAppended'>>,
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

  // With `minIntervalMs`, an append committed through the same store names its position: the
  // subscription reads again within `minIntervalMs` (not a poll interval), and keeps doing so
  // until it has read that far, even when a read finds the event still held back by an older
  // open transaction. Reads start at least `minIntervalMs` apart, so a busy log is still read in
  // batches rather than once per append. Appends of other processes are seen by polling.
  const minIntervalMs = Math.min(pollIntervalMs, options.minIntervalMs ?? pollIntervalMs);
  let readStartedAt = -Infinity;
  const untilNextRead = (): number => readStartedAt + minIntervalMs - performance.now();
  let awaited: Position | undefined;
  let sleeping: ReturnType<typeof pause> | undefined;
  const stopListening =
    options.minIntervalMs === undefined
      ? undefined
      : store.onAppended?.((appended) => {
          if (awaited === undefined || comparePositions(appended, awaited) > 0) awaited = appended;
          sleeping?.wake(untilNextRead());
        });

  const loop = async (): Promise<void> => {
    let position: Position | null = null;
    let failing = false;
    try {
      while (!stopping.signal.aborted) {
        readStartedAt = performance.now();
        try {
          position ??= (await store.readCheckpoint(consumer)) ?? START_POSITION;
          const events: StoredEvent[] = await store.readAll({ after: position, maxCount: batchSize });
          if (events.length > 0) {
            await handler(events);
            const last = events[events.length - 1];
            const next = { transactionId: last.transactionId, globalPosition: last.globalPosition };
            await store.storeCheckpoint(consumer, next);
            position = next;
          }
          if (failing) {
            failing = false;
            options.onRecovered?.();
          }
          // A full batch means more is probably waiting: read on without pausing.
          if (events.length === batchSize) continue;
        } catch (error) {
          if (!options.onError) throw error;
          failing = true;
          options.onError(error);
          // A failure waits out the whole interval, appends or not: no retry storm.
          await pause(pollIntervalMs, stopping.signal).done;
          continue;
        }
        sleeping = pause(pollIntervalMs, stopping.signal);
        if (awaited !== undefined && position !== null && comparePositions(position, awaited) < 0)
          sleeping.wake(untilNextRead());
        await sleeping.done;
        sleeping = undefined;
      }
    } finally {
      stopListening?.();
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
