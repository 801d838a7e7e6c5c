import type { JetStreamClient, PubAck } from '@nats-io/jetstream';
import { MessageDecodeError } from './messaging.errors';

/**
 * Publishes `payload` as JSON to a JetStream subject and waits for the stream's PubAck.
 * With `msgID` the stream drops a repeat inside its duplicate window: the PubAck of a repeat
 * has `duplicate: true` and the sequence of the first copy.
 */
export function publishJson<T>(js: JetStreamClient, subject: string, payload: T, msgID?: string): Promise<PubAck> {
  return js.publish(subject, JSON.stringify(payload), msgID === undefined ? undefined : { msgID });
}

/**
 * Parses the JSON body of a NATS or JetStream message. Throws `MessageDecodeError`
 * (`MESSAGE_DECODE_FAILED`) naming the subject when the body is not JSON. The shape is not
 * checked: validate what you read before trusting it.
 */
export function decodeJson<T>(msg: { subject: string; data: Uint8Array }): T {
  try {
    return JSON.parse(new TextDecoder().decode(msg.data)) as T;
  } catch (err) {
    throw new MessageDecodeError(msg.subject, (err as Error).message, { cause: err });
  }
}
