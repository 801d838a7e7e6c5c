import { randomBytes } from 'node:crypto';
import type { Msg, NatsConnection } from '@nats-io/transport-node';
import { connectTestNats, waitUntil } from '@granule/messaging';
import { EventStore } from './event-store';
import type { NewEvent } from './event-store.types';
import { NatsOutboxPublisher, type PublishedEvent } from './nats-outbox.publisher';
import { createTestDatabase, type TestDatabase } from './testing/test-database';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const happened = (n: number): NewEvent => ({
  type: 'TaskSucceeded',
  data: { n },
  metadata: { correlationId: 'run-1' },
});

describe('NatsOutboxPublisher', () => {
  let db: TestDatabase;
  let store: EventStore;
  let nc: NatsConnection;
  // Own subject prefix so other suites publishing on the server do not interfere.
  const prefix = `test.${randomBytes(4).toString('hex')}.events`;
  const received: Msg[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('es_outbox');
    store = new EventStore(db.dataSource);
    nc = await connectTestNats('nats-outbox.publisher-test');
    nc.subscribe(`${prefix}.>`, { callback: (_err, msg) => void received.push(msg) });
    await nc.flush();
  });

  afterAll(async () => {
    await nc?.drain();
    await db?.drop();
  });

  it('publishes committed events in commit order on per-stream subjects, checkpoints, and resumes after a restart', async () => {
    await store.appendBatch([
      { streamId: 'run-1', events: [happened(1), happened(2)], expectedVersion: 'no_stream' },
      { streamId: 'node-web-1', events: [happened(3)], expectedVersion: 'no_stream' },
    ]);
    await store.appendToStream('run-1', [happened(4)], { expectedVersion: 2 });

    const options = { subjectPrefix: prefix, pollIntervalMs: 20, batchSize: 2 };
    const publisher = new NatsOutboxPublisher(nc, store, options);
    publisher.start();
    expect(() => publisher.start()).toThrow('NatsOutboxPublisher is already started');
    await waitUntil(() => received.length === 4, 'four messages', 3000);
    await publisher.stop();

    expect(received.map((m) => m.subject)).toEqual([
      `${prefix}.run.run-1`,
      `${prefix}.run.run-1`,
      `${prefix}.node.node-web-1`,
      `${prefix}.run.run-1`,
    ]);
    const bodies = received.map((m) => m.json<PublishedEvent>());
    expect(bodies.map((b) => [b.streamId, b.streamType, b.streamVersion, b.data])).toEqual([
      ['run-1', 'run', 1, { n: 1 }],
      ['run-1', 'run', 2, { n: 2 }],
      ['node-web-1', 'node', 1, { n: 3 }],
      ['run-1', 'run', 3, { n: 4 }],
    ]);

    const stored = await store.readStream('run-1');
    expect(bodies[3]).toEqual({
      type: 'TaskSucceeded',
      schemaVersion: 1,
      data: { n: 4 },
      metadata: { correlationId: 'run-1' },
      streamId: 'run-1',
      streamType: 'run',
      streamVersion: 3,
      globalPosition: stored[2].globalPosition,
      transactionId: stored[2].transactionId,
      createdAt: stored[2].createdAt.toISOString(),
    });
    expect(received.map((m) => m.headers?.get('Nats-Msg-Id'))).toEqual(bodies.map((b) => b.globalPosition));
    expect(received[0].headers?.get('Granule-Event-Type')).toBe('TaskSucceeded');
    expect(await store.readCheckpoint('granule-nats-outbox')).toEqual({
      transactionId: stored[2].transactionId,
      globalPosition: stored[2].globalPosition,
    });

    // Stopped: nothing more goes out.
    await store.appendToStream('run-1', [happened(5)], { expectedVersion: 3 });
    await sleep(100);
    expect(received).toHaveLength(4);

    // A new publisher under the same name continues after the checkpoint.
    const restarted = new NatsOutboxPublisher(nc, store, options);
    restarted.start();
    await waitUntil(() => received.length === 5, 'the fifth message', 3000);
    await sleep(80);
    await restarted.stop();
    await restarted.stop();
    expect(received.slice(4).map((m) => m.json<PublishedEvent>().data)).toEqual([{ n: 5 }]);
  });

  it('keeps its checkpoint and reports the error when the connection is closed', async () => {
    const closed = await connectTestNats('nats-outbox.publisher-test');
    await closed.close();
    const errors: unknown[] = [];
    const publisher = new NatsOutboxPublisher(closed, store, {
      consumerName: 'closed-outbox',
      subjectPrefix: prefix,
      pollIntervalMs: 20,
      onError: (error) => errors.push(error),
    });
    publisher.start();
    await waitUntil(() => errors.length >= 2, 'two failed attempts', 3000);
    await publisher.stop();
    expect((errors[0] as Error).name).toBe('ClosedConnectionError');
    expect(await store.readCheckpoint('closed-outbox')).toBeNull();
  });

  it('with minIntervalMs publishes an event appended through its store at once, whatever the poll interval', async () => {
    const publisher = new NatsOutboxPublisher(nc, store, {
      subjectPrefix: prefix,
      consumerName: 'outbox-wake',
      pollIntervalMs: 60_000,
      minIntervalMs: 25,
    });
    publisher.start();
    try {
      // The first read publishes again what the earlier tests left; then the publisher sleeps for a minute.
      await sleep(300);
      const wake = () => received.filter((m) => m.subject === `${prefix}.run.run-wake`);
      await store.appendToStream('run-wake', [happened(99)], { expectedVersion: 'no_stream' });
      await waitUntil(() => wake().length > 0, 'the woken publish', 3000);
      expect(wake().map((m) => m.json<PublishedEvent>().data)).toEqual([{ n: 99 }]);
    } finally {
      await publisher.stop();
    }
  });
});
