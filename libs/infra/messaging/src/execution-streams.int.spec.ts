import { randomBytes } from 'node:crypto';
import { executionSubjects } from '@granule/contracts';
import {
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { deleteExecutionStreams, ensureAgentConsumer, ensureExecutionStreams } from './execution-streams';
import { decodeJson, publishJson } from './json-messages';
import { connectTestNats } from './testing/test-services';

describe('execution streams', () => {
  // Own prefix per suite, so other suites on the same server never see these streams.
  const prefix = `t${randomBytes(4).toString('hex')}`;
  const s = executionSubjects(prefix);
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let js: JetStreamClient;

  beforeAll(async () => {
    nc = await connectTestNats('messaging-int-test');
    jsm = await jetstreamManager(nc);
    js = jetstream(nc);
  });

  afterAll(async () => {
    await deleteExecutionStreams(jsm, prefix);
    await nc.close();
  });

  it('creating them twice is idempotent, and a drifted setting is put back', async () => {
    const first = await ensureExecutionStreams(nc, prefix);
    expect(first.map((i) => i.config.name)).toEqual([
      s.commands.stream,
      s.dispatch.stream,
      s.results.stream,
      s.logs.stream,
      s.events.stream,
      s.storedLogs.stream,
    ]);

    await jsm.streams.update(s.results.stream, { duplicate_window: 5_000_000_000 });
    const second = await ensureExecutionStreams(jsm, prefix);
    expect(
      second.map((i) => [i.config.name, i.config.subjects, i.config.retention, i.config.duplicate_window]),
    ).toEqual([
      [s.commands.stream, [`${prefix}.cmd.>`], 'workqueue', 120_000_000_000],
      [s.dispatch.stream, [`${prefix}.dispatch.>`], 'workqueue', 600_000_000_000],
      [s.results.stream, [`${prefix}.result.>`], 'limits', 600_000_000_000],
      [s.logs.stream, [`${prefix}.log.>`], 'workqueue', 600_000_000_000],
      [s.events.stream, [`${prefix}.events.>`], 'limits', 600_000_000_000],
      [s.storedLogs.stream, [`${prefix}.logs.stored.>`], 'limits', 600_000_000_000],
    ]);
    expect((await jsm.streams.names().next()).filter((n) => n.startsWith(prefix.toUpperCase()))).toHaveLength(6);
  });

  it('a dispatch published twice with one msgID is stored once; the repeat is flagged duplicate', async () => {
    await ensureExecutionStreams(nc, prefix);
    const subject = `${prefix}.result.dedup-run`;
    const a = await publishJson(js, subject, { n: 1 }, 'dedup-run/a@n/1');
    const b = await publishJson(js, subject, { n: 2 }, 'dedup-run/a@n/1');
    const c = await publishJson(js, subject, { n: 3 }, 'dedup-run/a@n/2');
    expect([a.duplicate, b.duplicate, c.duplicate]).toEqual([false, true, false]);
    expect(b.seq).toBe(a.seq);
    const info = await jsm.streams.info(s.results.stream, { subjects_filter: subject });
    expect(info.state.subjects).toEqual({ [subject]: 2 });
  });

  it("an agent's filtered consumer sees only its node's dispatches, one unacknowledged at a time", async () => {
    await ensureExecutionStreams(nc, prefix);
    const a = await ensureAgentConsumer(jsm, prefix, 'node-a');
    await ensureAgentConsumer(jsm, prefix, 'node-a'); // again: no error, same consumer
    await ensureAgentConsumer(jsm, prefix, 'node-b');
    expect([a.name, a.config.filter_subject, a.config.max_ack_pending]).toEqual([
      'agent-node-a',
      `${prefix}.dispatch.node-a`,
      1,
    ]);

    for (const [node, n] of [
      ['node-a', 1],
      ['node-b', 2],
      ['node-a', 3],
      ['node-c', 4],
    ] as const) {
      await publishJson(js, s.dispatch.forNode(node), { node, n }, `d-${n}`);
    }

    const consumerA = await js.consumers.get(s.dispatch.stream, 'agent-node-a');
    const batch = await consumerA.fetch({ max_messages: 5, expires: 1000 });
    const seen: JsMsg[] = [];
    for await (const m of batch) seen.push(m);
    // max_ack_pending 1: the second message for node-a waits until the first is acknowledged.
    expect(seen.map((m) => decodeJson<{ n: number }>(m).n)).toEqual([1]);
    seen[0].ack();
    const next = await consumerA.next({ expires: 1000 });
    expect(next && decodeJson<{ node: string; n: number }>(next)).toEqual({ node: 'node-a', n: 3 });
    next?.ack();
    expect(await consumerA.next({ expires: 1000 })).toBeNull();

    const consumerB = await js.consumers.get(s.dispatch.stream, 'agent-node-b');
    const b = await consumerB.next({ expires: 1000 });
    expect(b && decodeJson<{ n: number }>(b).n).toBe(2);
    await b?.ackAck();
    // Work queue: acknowledged dispatches are gone; node-c's waits for its agent's consumer.
    const info = await jsm.streams.info(s.dispatch.stream, { subjects_filter: '>' });
    expect(info.state.subjects).toEqual({ [`${prefix}.dispatch.node-c`]: 1 });
  });
});
