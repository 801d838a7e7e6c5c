import { randomBytes } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { executionSubjects, type TaskDispatchMessage } from '@granule/contracts';
import { connectTestNats, deleteExecutionStreams, ensureExecutionStreams } from '@granule/messaging';
import { JetStreamDispatcher } from './nats-dispatcher.adapter';

describe('JetStreamDispatcher (NATS JetStream)', () => {
  let nc: NatsConnection;
  const prefix = `dispwin${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    nc = await connectTestNats('nats-dispatcher.adapter-test');
    await ensureExecutionStreams(nc, prefix);
  });
  afterAll(async () => {
    await deleteExecutionStreams(nc, prefix);
    await nc.close();
  });

  const dispatch = (n: number): TaskDispatchMessage => ({
    runId: 'r1',
    key: `t@node-${n}`,
    task: 't',
    node: `node-${n}`,
    type: 'shell',
    parameters: { cmd: 'true' },
    attempt: 1,
    dispatchId: `r1/t@node-${n}/1`,
    noop: false,
  });

  it('a burst of dispatches - at most the window in flight, every one stored on its node subject', async () => {
    const dispatcher = new JetStreamDispatcher(nc, jetstream(nc), prefix, undefined, undefined, 8);
    await Promise.all(Array.from({ length: 200 }, (_, n) => dispatcher.dispatch(dispatch(n))));
    expect(dispatcher.peakInFlight).toBe(8);
    const jsm = await jetstreamManager(nc);
    const s = executionSubjects(prefix);
    const info = await jsm.streams.info(s.dispatch.stream, { subjects_filter: s.dispatch.forNode('*') });
    expect(info.state.messages).toBe(200);
    expect(Object.keys(info.state.subjects ?? {})).toHaveLength(200);
  });

  it('a publish that fails gives its place to the next one', async () => {
    const dispatcher = new JetStreamDispatcher(nc, jetstream(nc), `${prefix}none`, undefined, undefined, 2);
    // No stream takes these subjects: each publish fails (no responders), and none may hold its place.
    const results = await Promise.allSettled(Array.from({ length: 6 }, (_, n) => dispatcher.dispatch(dispatch(n))));
    expect(results.map((r) => r.status)).toEqual(Array(6).fill('rejected'));
    expect(dispatcher.peakInFlight).toBe(2);
    // Not left waiting for a place that a failed publish kept: it is sent, and fails, at once.
    await expect(dispatcher.dispatch(dispatch(1))).rejects.toThrow();
  });
});
