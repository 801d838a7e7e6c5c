import { randomBytes } from 'node:crypto';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, RetentionPolicy } from '@nats-io/jetstream';
import type { JsMsg } from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { JetStreamConsumers, type ConsumerLogger, type ConsumerRun, type Settle } from './jetstream-consumers';
import { JetStreamSetupError } from './messaging.errors';
import { connectNats } from './nats-connection';
import { waitUntil } from './testing/eventually';
import { startPrivateNats, type PrivateServer } from './testing/private-servers';
import { connectTestNats } from './testing/test-services';

jest.setTimeout(60_000);

/** The lines a consumer wrote, as `level: message`. */
function recordingLogger(): ConsumerLogger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    info: (_fields, message) => void lines.push(`info: ${message}`),
    warn: (_fields, message) => void lines.push(`warn: ${message}`),
    error: (_fields, message) => void lines.push(`error: ${message}`),
  };
}

const text = (msg: JsMsg): string => new TextDecoder().decode(msg.data);

/** A stream of the test's own, with a unique name, deleted after it. */
async function ownStream(nc: NatsConnection, tag: string): Promise<{ stream: string; subject: string }> {
  const id = `${tag}${randomBytes(4).toString('hex')}`;
  const stream = `TEST_CONSUMERS_${id.toUpperCase()}`;
  const subject = `test.consumers.${id}`;
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: stream, subjects: [`${subject}.>`], retention: RetentionPolicy.Workqueue });
  return { stream, subject };
}

async function publish(nc: NatsConnection, subject: string, bodies: string[]): Promise<void> {
  const js = jetstream(nc);
  for (const body of bodies) await js.publish(`${subject}.m`, body);
}

async function pendingOf(nc: NatsConnection, stream: string): Promise<number> {
  return (await (await jetstreamManager(nc)).streams.info(stream)).state.messages;
}

describe('JetStreamConsumers (the machine NATS)', () => {
  let nc: NatsConnection;
  const streams: string[] = [];
  let consumers: JetStreamConsumers;
  let logger: ReturnType<typeof recordingLogger>;

  beforeAll(async () => {
    nc = await connectTestNats('jetstream-consumers-int-test');
  });

  beforeEach(() => {
    logger = recordingLogger();
    consumers = new JetStreamConsumers(nc, logger);
  });

  afterEach(async () => {
    await consumers.onModuleDestroy();
  });

  afterAll(async () => {
    const jsm = await jetstreamManager(nc);
    for (const stream of streams) await jsm.streams.delete(stream).catch(() => undefined);
    await nc?.close();
  });

  async function stream(tag: string): Promise<{ stream: string; subject: string }> {
    const s = await ownStream(nc, tag);
    streams.push(s.stream);
    return s;
  }

  const durable = (name: string, extra: object = {}) => ({
    durable_name: name,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ...extra,
  });

  it('hands messages over in stream order, one at a time, and acknowledges them', async () => {
    const { stream: name, subject } = await stream('order');
    const bodies = Array.from({ length: 30 }, (_, i) => `m${i}`);
    await publish(nc, subject, bodies);
    const seen: string[] = [];
    let inHand = 0;
    let mostInHand = 0;
    await consumers.start({
      what: 'order test feed',
      stream: name,
      config: durable('order'),
      handle: async (msg) => {
        mostInHand = Math.max(mostInHand, ++inHand);
        await new Promise((r) => setTimeout(r, 2));
        seen.push(text(msg));
        inHand--;
        return 'ack';
      },
    });
    await waitUntil(() => seen.length === bodies.length, 'every message', 20_000);
    expect(seen).toEqual(bodies);
    expect(mostInHand).toBe(1);
    // Acknowledged: a work queue stream drops what its consumer acknowledged.
    await waitUntil(async () => (await pendingOf(nc, name)) === 0, 'the stream to empty', 20_000);
  });

  it('delivers a nak again (after its delay) and never a term, and counts deliveries', async () => {
    const { stream: name, subject } = await stream('nak');
    await publish(nc, subject, ['keep', 'again', 'drop']);
    const seen: string[] = [];
    await consumers.start({
      what: 'nak test feed',
      stream: name,
      config: durable('nak', { ack_wait: nanos(30_000) }),
      handle: async (msg): Promise<Settle> => {
        seen.push(`${text(msg)}#${msg.info.deliveryCount}`);
        if (text(msg) === 'drop') return 'term';
        if (text(msg) === 'again' && msg.info.deliveryCount === 1) return { nak: 200 };
        return 'ack';
      },
    });
    await waitUntil(() => seen.includes('again#2'), 'the nak to come again', 20_000);
    await new Promise((r) => setTimeout(r, 500));
    expect(seen).toEqual(['keep#1', 'again#1', 'drop#1', 'again#2']);
    await waitUntil(async () => (await pendingOf(nc, name)) === 0, 'the stream to empty', 20_000);
  });

  it('sets a deleted consumer up again and goes on, logging the outage once', async () => {
    const { stream: name, subject } = await stream('deleted');
    const seen: string[] = [];
    await consumers.start({
      what: 'deleted test feed',
      stream: name,
      config: durable('deleted'),
      restartMs: 100,
      handle: async (msg) => {
        seen.push(text(msg));
        return 'ack';
      },
    });
    await publish(nc, subject, ['before']);
    await waitUntil(() => seen.length === 1, 'the first message', 20_000);
    const jsm = await jetstreamManager(nc);
    await jsm.consumers.delete(name, 'deleted');
    await publish(nc, subject, ['after-1', 'after-2']);
    await waitUntil(() => seen.length === 3, 'the messages sent after the deletion', 20_000);
    expect(seen).toEqual(['before', 'after-1', 'after-2']);
    expect((await jsm.consumers.info(name, 'deleted')).config.durable_name).toBe('deleted');
    expect(logger.lines).toEqual([
      'warn: the deleted test feed stopped; setting it up again every 0.1 s',
      'info: the deleted test feed consumes again',
    ]);
  });

  it('restarts a feed whose handler threw; the message comes again after ack_wait', async () => {
    const { stream: name, subject } = await stream('throws');
    await publish(nc, subject, ['bad', 'good']);
    const seen: string[] = [];
    await consumers.start({
      what: 'throwing test feed',
      stream: name,
      config: durable('throws', { ack_wait: nanos(1000) }),
      restartMs: 100,
      handle: async (msg) => {
        seen.push(`${text(msg)}#${msg.info.deliveryCount}`);
        if (text(msg) === 'bad' && msg.info.deliveryCount === 1) throw new Error('boom');
        return 'ack';
      },
    });
    await waitUntil(() => seen.includes('bad#2') && seen.some((s) => s.startsWith('good')), 'both handled', 20_000);
    expect(seen[0]).toBe('bad#1');
    expect(logger.lines).toContain('error: the throwing test feed failed to handle a message; it is delivered again');
    expect(logger.lines.filter((l) => l.startsWith('warn'))).toEqual([]);
    await waitUntil(async () => (await pendingOf(nc, name)) === 0, 'the stream to empty', 20_000);
  });

  it('forms batches of what came while a batch was handled, in order, settling each message', async () => {
    const { stream: name, subject } = await stream('batch');
    const bodies = Array.from({ length: 40 }, (_, i) => `b${i}`);
    const batches: string[][] = [];
    let release!: () => void;
    const firstHeld = new Promise<void>((r) => (release = r));
    await consumers.start({
      what: 'batch test feed',
      stream: name,
      config: durable('batch'),
      batch: 16,
      handleBatch: async (msgs) => {
        batches.push(msgs.map(text));
        if (batches.length === 1) await firstHeld;
        return msgs.map((m): Settle => (text(m) === 'b39' ? 'term' : 'ack'));
      },
    });
    await publish(nc, subject, bodies.slice(0, 1));
    await waitUntil(() => batches.length === 1, 'the first batch', 20_000);
    await publish(nc, subject, bodies.slice(1));
    await new Promise((r) => setTimeout(r, 300));
    release();
    await waitUntil(() => batches.flat().length === bodies.length, 'every message', 20_000);
    expect(batches.flat()).toEqual(bodies);
    expect(batches[0]).toEqual(['b0']);
    expect(batches.slice(1).every((b) => b.length <= 16)).toBe(true);
    // What came while the first was held went in full batches, not one by one.
    expect(batches.length).toBeLessThanOrEqual(1 + Math.ceil(39 / 16) + 1);
    await waitUntil(async () => (await pendingOf(nc, name)) === 0, 'the stream to empty', 20_000);
  });

  it('stops on module destroy after the message in hand, and consumes nothing more', async () => {
    const { stream: name, subject } = await stream('stop');
    const seen: string[] = [];
    let handling!: () => void;
    const inHand = new Promise<void>((r) => (handling = r));
    let finish!: () => void;
    const finished = new Promise<void>((r) => (finish = r));
    const run: ConsumerRun = await consumers.start({
      what: 'stop test feed',
      stream: name,
      config: durable('stop', { ack_wait: nanos(3000) }),
      handle: async (msg) => {
        seen.push(text(msg));
        handling();
        await finished;
        return 'ack';
      },
    });
    await publish(nc, subject, ['first', 'second', 'third']);
    await inHand;
    let stopped = false;
    const stopping = consumers.onModuleDestroy().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 200));
    expect(run.stopping).toBe(true);
    expect(stopped).toBe(false); // waits for the message in hand
    finish();
    await stopping;
    await publish(nc, subject, ['fourth']);
    await new Promise((r) => setTimeout(r, 300));
    expect(seen).toEqual(['first']);
    await expect(
      consumers.start({
        what: 'late',
        stream: name,
        config: durable('stop', { ack_wait: nanos(3000) }),
        handle: async () => 'ack',
      }),
    ).rejects.toBeInstanceOf(JetStreamSetupError);
    // Nothing unhandled is lost and the handled one is not done again: the buffered ones were
    // handed back (nak), and one JetStream delivered into a pull that was in flight at the stop
    // comes back after ack_wait (3 s here).
    const next = new JetStreamConsumers(nc, recordingLogger());
    const after: string[] = [];
    await next.start({
      what: 'next stop test feed',
      stream: name,
      config: durable('stop', { ack_wait: nanos(3000) }),
      handle: async (msg) => {
        after.push(text(msg));
        return 'ack';
      },
    });
    try {
      await waitUntil(() => new Set(after).size === 3, 'the handed back messages', 10_000);
      expect([...new Set(after)].sort()).toEqual(['fourth', 'second', 'third']);
      expect(after).not.toContain('first');
    } finally {
      await next.onModuleDestroy();
    }
  });

  it('refuses a consumer JetStream cannot set up with an error naming it and the stream', async () => {
    await expect(
      consumers.start({
        what: 'missing test feed',
        stream: 'TEST_CONSUMERS_NO_SUCH_STREAM',
        config: durable('nobody'),
        handle: async () => 'ack',
      }),
    ).rejects.toThrow(
      /cannot set up the consumer nobody of the missing test feed on stream TEST_CONSUMERS_NO_SUCH_STREAM: stream not found/,
    );
  });
});

describe('JetStreamConsumers (a NATS server of its own, restarted)', () => {
  let server: PrivateServer;
  let nc: NatsConnection;

  beforeAll(async () => {
    server = await startPrivateNats();
    nc = await connectNats({ natsUrl: server.url }, 'jetstream-consumers-restart-test');
  });

  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it('goes on consuming after the server restarts', async () => {
    const { stream, subject } = await ownStream(nc, 'restart');
    const consumers = new JetStreamConsumers(nc, recordingLogger());
    const seen: string[] = [];
    await consumers.start({
      what: 'restart test feed',
      stream,
      config: { durable_name: 'restart', ack_policy: AckPolicy.Explicit },
      handle: async (msg) => {
        seen.push(text(msg));
        return 'ack';
      },
    });
    try {
      await publish(nc, subject, ['before']);
      await waitUntil(() => seen.length === 1, 'the first message', 20_000);
      await server.restart(300);
      await waitUntil(
        async () =>
          publish(nc, subject, ['after']).then(
            () => true,
            () => false,
          ),
        'the client to publish again',
        20_000,
      );
      await waitUntil(() => seen.includes('after'), 'the message sent after the restart', 40_000);
      expect(seen[0]).toBe('before');
    } finally {
      await consumers.onModuleDestroy();
    }
  });
});
