import { randomBytes } from 'node:crypto';
import { Objm } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { deleteExecutionStreams } from './execution-streams';
import { connectNats } from './nats-connection';
import { ensureInputsBucket, inputsBucket, inputsDigest, StoredInputs, StoredInputsError } from './stored-inputs';
import { startPrivateNats, type PrivateServer } from './testing/private-servers';

/** Inline inputs of `nodes` nodes: far over 64 KiB as JSON for a few thousand. */
function inputsOf(nodes: number): { graphs: Record<string, unknown[]>; nodes: unknown[] } {
  return {
    graphs: { default: [{ id: 'noop', type: 'shell', roles: ['worker'], parameters: { cmd: 'true' } }] },
    nodes: Array.from({ length: nodes }, (_, i) => ({ uid: `n${i}`, name: `node-${i}`, roles: ['worker'] })),
  };
}

async function refusal(work: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await work;
  } catch (err) {
    if (err instanceof StoredInputsError) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error('expected a StoredInputsError');
}

describe('StoredInputs (a NATS of its own, max_payload 64 KiB)', () => {
  let server: PrivateServer;
  let nc: NatsConnection;
  const prefix = `inp${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    server = await startPrivateNats({ settings: ['max_payload: 65536'] });
    nc = await connectNats({ natsUrl: server.url }, 'stored-inputs-test');
    await ensureInputsBucket(nc, prefix);
  }, 30_000);
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it('inputs larger than max_payload go in chunks and come back equal, named by their SHA-256', async () => {
    const value = inputsOf(5000);
    const bytes = new TextEncoder().encode(JSON.stringify(value));
    expect(bytes.length).toBeGreaterThan(4 * 65536);
    const ref = await new StoredInputs(nc, prefix).put(value);
    expect(ref).toEqual({ name: inputsDigest(bytes), size: bytes.length });
    // Another connection (the planner's) reads them back.
    const reader = await connectNats({ natsUrl: server.url }, 'stored-inputs-reader');
    try {
      expect(await new StoredInputs(reader, prefix).get(ref)).toEqual(value);
    } finally {
      await reader.close();
    }
    const info = await (await new Objm(nc).open(inputsBucket(prefix))).info(ref.name);
    expect(info?.chunks).toBeGreaterThan(4);
  });

  it('the same inputs stored twice are one object', async () => {
    const store = new StoredInputs(nc, prefix);
    const [a, b] = [await store.put(inputsOf(10)), await store.put(inputsOf(10))];
    expect(a).toEqual(b);
    expect(await store.get(b)).toEqual(inputsOf(10));
  });

  it('other bytes put under a stored name are refused when read (INPUTS_DAMAGED), naming the bucket', async () => {
    const store = new StoredInputs(nc, prefix);
    const ref = await store.put(inputsOf(20));
    // A writer with access to the bucket replaces the object with other JSON under the same name.
    await (
      await new Objm(nc).open(inputsBucket(prefix))
    ).putBlob({ name: ref.name }, new TextEncoder().encode(JSON.stringify(inputsOf(21))));
    const r = await refusal(store.get(ref));
    expect(r.code).toBe('INPUTS_DAMAGED');
    expect(r.message).toContain(`inputs ${ref.name.slice(0, 12)}… in object store ${inputsBucket(prefix)}`);
    expect(r.message).toContain('are not what their name says');
  });

  it('inputs that are not there are INPUTS_NOT_FOUND, saying what to do', async () => {
    const r = await refusal(new StoredInputs(nc, prefix).get({ name: 'a'.repeat(64), size: 10 }));
    expect(r).toEqual({
      code: 'INPUTS_NOT_FOUND',
      message: `inputs aaaaaaaaaaaa… in object store ${inputsBucket(prefix)} are gone (inputs are kept 7 days): start the deployment again`,
    });
  });

  it('without the bucket (no orchestrator ever started) nothing is stored: INPUTS_NOT_STORED says why', async () => {
    const other = `inp${randomBytes(3).toString('hex')}`;
    const r = await refusal(new StoredInputs(nc, other).put(inputsOf(3)));
    expect(r.code).toBe('INPUTS_NOT_STORED');
    expect(r.message).toMatch(
      new RegExp(
        `could not be stored in object store ${inputsBucket(other)}: the bucket does not exist \\(the orchestrator creates it when it starts\\)$`,
      ),
    );
  });

  it('deleteExecutionStreams removes the bucket with the streams', async () => {
    const other = `inp${randomBytes(3).toString('hex')}`;
    await ensureInputsBucket(nc, other);
    await deleteExecutionStreams(nc, other);
    const r = await refusal(new StoredInputs(nc, other).put(inputsOf(3)));
    expect(r.code).toBe('INPUTS_NOT_STORED');
  });
});
