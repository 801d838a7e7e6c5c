import type { NatsConnection } from '@nats-io/transport-node';
import { executionSubjects, type StartDeployment } from '@granule/contracts';
import {
  connectNats,
  ensureInputsBucket,
  startPrivateNats,
  StoredInputs,
  type PrivateServer,
} from '@granule/messaging';
import { storeLargeInputs, type NatsSession } from './nats-session';

const MAX_PAYLOAD = 65_536;

/** A deployment of `nodes` nodes, sent inline. */
function deployment(nodes: number): StartDeployment {
  return {
    commandId: 'c1',
    runId: 'r1',
    graph: 'default',
    dryRun: false,
    noop: false,
    inline: {
      graphs: { default: [{ id: 'noop', type: 'shell', roles: ['*'], parameters: { cmd: 'true' } }] },
      nodes: Array.from({ length: nodes }, (_, i) => ({ uid: `n${i}`, roles: ['worker'] })),
    },
  };
}

describe('storeLargeInputs (a NATS of its own, max_payload 64 KiB)', () => {
  let server: PrivateServer;
  let nc: NatsConnection;
  let session: NatsSession;
  const prefix = 'clistore';

  beforeAll(async () => {
    server = await startPrivateNats({ settings: [`max_payload: ${MAX_PAYLOAD}`] });
    nc = await connectNats({ natsUrl: server.url }, 'cli-store-test');
    await ensureInputsBucket(nc, prefix);
    session = { nc, prefix, subjects: executionSubjects(prefix), url: server.url };
  }, 30_000);
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it('a command that fits in one message keeps its inputs inline', async () => {
    const command = deployment(100);
    expect(await storeLargeInputs(session, command)).toBe(command);
  });

  it('a command over max_payload names its stored inputs instead, and now fits', async () => {
    const command = deployment(3000);
    const size = (c: unknown): number => new TextEncoder().encode(JSON.stringify(c)).length;
    expect(size(command)).toBeGreaterThan(MAX_PAYLOAD);
    const sent = await storeLargeInputs(session, command);
    expect(sent.inline).toBeUndefined();
    expect(sent.inputs?.name).toMatch(/^[0-9a-f]{64}$/);
    expect(size(sent)).toBeLessThan(1024);
    const { inline, ...rest } = command;
    expect({ ...sent, inputs: undefined }).toEqual({ ...rest, inputs: undefined });
    expect(await new StoredInputs(nc, prefix).get(sent.inputs as NonNullable<typeof sent.inputs>)).toEqual(inline);
  });

  it('one that would fit but for its headers is stored too (room is kept for the signature)', async () => {
    let nodes = 100;
    while (new TextEncoder().encode(JSON.stringify(deployment(nodes + 10))).length < MAX_PAYLOAD - 4096) nodes += 10;
    expect((await storeLargeInputs(session, deployment(nodes))).inputs).toBeDefined();
  });
});
