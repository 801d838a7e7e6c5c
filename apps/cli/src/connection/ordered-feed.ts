import { jetstream, type ConsumerMessages, type OrderedConsumerOptions } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

/**
 * How long the server keeps a follower's consumer once nothing pulls from it: a CLI killed in
 * the middle of a follow leaves its consumer this long (nats.js's default is 5 minutes). A live
 * follower asks again as each pull expires ({@link PULL_EXPIRES_MS}), so it stays well inside.
 */
export const FOLLOWER_INACTIVE_MS = 60_000;

/**
 * How long one pull waits on the server. Several pulls fit in the inactivity threshold: with
 * nats.js's default of 30 s, equal to a 30 s threshold, the server could drop a live follower's
 * consumer in the moment between a pull's end and the next (a run quiet for half a minute).
 */
const PULL_EXPIRES_MS = 10_000;

/** How long ending a follow waits for the server to remove its consumer. */
const REMOVE_WAIT_MS = 3000;

/** An ordered consumer being followed (ADR 0033). */
export interface OrderedFeed {
  messages: ConsumerMessages;
  /** What the stream held for the filter when the consumer was created. */
  held: number;
  /**
   * Stops pulling (buffered messages are dropped with the iterator: closing would wait for them
   * to be read) and removes the consumer from the server, waiting a second at most, so a follow
   * that ended leaves nothing behind. Once; later calls wait for the first.
   */
  end(): Promise<void>;
}

/**
 * Follows `stream` through an ordered consumer: the client recreates it from the last delivered
 * sequence after a disconnect or a NATS restart, so nothing is missed or delivered twice.
 */
export async function openOrderedFeed(
  nc: NatsConnection,
  stream: string,
  options: Partial<OrderedConsumerOptions>,
  batch: number,
): Promise<OrderedFeed> {
  const consumer = await jetstream(nc).consumers.get(stream, { ...options, inactive_threshold: FOLLOWER_INACTIVE_MS });
  const held = (await consumer.info(true)).num_pending;
  // Asks for more after every message: nats.js 3.4 recreates an ordered consumer (after a NATS
  // restart) without forgetting what it had asked for before, so with the usual threshold (3/4
  // of the batch) it may ask for only the difference and then wait half a minute.
  const messages = await consumer.consume({
    max_messages: batch,
    threshold_messages: batch,
    expires: PULL_EXPIRES_MS,
  });
  let ending: Promise<void> | undefined;
  const end = async (): Promise<void> => {
    void messages.stop();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      // Gone already (removed by the server, or NATS away): nothing to remove.
      consumer.delete().then(
        () => undefined,
        () => undefined,
      ),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, REMOVE_WAIT_MS))),
    ]);
    clearTimeout(timer);
  };
  return { messages, held, end: () => (ending ??= end()) };
}
