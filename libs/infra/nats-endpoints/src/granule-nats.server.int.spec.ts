import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { Controller, Module } from '@nestjs/common';
import type { INestMicroservice } from '@nestjs/common';
import { APP_FILTER, NestFactory } from '@nestjs/core';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { createInbox } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { GranuleError, InvalidInputError } from '@granule/core';
import { connectNats, request, startPrivateNats, waitUntil } from '@granule/messaging';
import type { PrivateServer } from '@granule/messaging';
import { GranuleNatsServer, ReplyExceptionFilter } from './granule-nats.server';

const SERVICE = { name: 'test-service', code: 'TEST_SERVICE', hint: 'start it' };

@Controller()
class ProbeController {
  @MessagePattern('probe.echo')
  echo(@Payload() p: unknown): unknown {
    return { echoed: p };
  }

  @MessagePattern('probe.refuse')
  refuse(): never {
    throw new GranuleError('PROBE_REFUSED', 'refused on purpose');
  }

  @MessagePattern('probe.invalid')
  invalid(): never {
    throw new InvalidInputError([
      { severity: 'error', code: 'INVALID_INPUT', file: 'x.yaml', line: 3, message: 'bad' },
    ]);
  }

  @MessagePattern('probe.crash')
  async crash(): Promise<never> {
    throw new TypeError('boom');
  }

  @MessagePattern('probe.big')
  big(@Payload() p: { bytes: number }): string {
    return 'x'.repeat(p.bytes);
  }

  @MessagePattern('probe.nothing')
  nothing(): void {
    return undefined;
  }
}

@Module({ controllers: [ProbeController], providers: [{ provide: APP_FILTER, useClass: ReplyExceptionFilter }] })
class ProbeModule {}

describe('GranuleNatsServer (Nest transport on a real NATS)', () => {
  let nats: PrivateServer;
  let serverConnection: NatsConnection;
  let client: NatsConnection;
  const apps: INestMicroservice[] = [];
  const internal: string[] = [];
  const prefix = `ep${randomBytes(3).toString('hex')}`;

  const startApp = async (): Promise<void> => {
    const app = await NestFactory.createMicroservice(ProbeModule, {
      strategy: new GranuleNatsServer({
        connection: serverConnection,
        prefix,
        queue: 'probe',
        onInternalError: (pattern, err) => internal.push(`${pattern}: ${(err as Error).message}`),
      }),
      logger: false,
    });
    await app.listen();
    apps.push(app);
  };

  beforeAll(async () => {
    // A small max_payload, so chunked answers and their limit are cheap to reach.
    nats = await startPrivateNats({ settings: ['max_payload: 65536'] });
    serverConnection = await connectNats({ natsUrl: nats.url }, 'probe-server');
    client = await connectNats({ natsUrl: nats.url }, 'probe-client');
    await startApp();
    await serverConnection.flush();
  });

  afterAll(async () => {
    for (const app of apps) await app.close();
    await client?.close();
    await serverConnection?.close();
    await nats?.stop();
  });

  const ask = (pattern: string, payload: unknown): Promise<unknown> =>
    request(client, SERVICE, `${prefix}.${pattern}`, payload, { timeoutMs: 5000 });
  const raw = async (pattern: string, data: Uint8Array): Promise<unknown> =>
    JSON.parse((await client.request(`${prefix}.${pattern}`, data, { timeout: 5000 })).string());

  it('answers with the result envelope', async () => {
    expect(await raw('probe.echo', new TextEncoder().encode('{"a":1}'))).toEqual({
      ok: true,
      result: { echoed: { a: 1 } },
    });
    expect(await ask('probe.echo', { a: [1, 2] })).toEqual({ echoed: { a: [1, 2] } });
    expect(await raw('probe.nothing', new Uint8Array())).toEqual({ ok: true, result: null });
  });

  it('a refusal keeps its code; invalid input keeps its findings; request() throws them again', async () => {
    expect(await raw('probe.refuse', new Uint8Array())).toEqual({
      ok: false,
      error: { code: 'PROBE_REFUSED', message: 'refused on purpose' },
    });
    await expect(ask('probe.refuse', {})).rejects.toMatchObject({
      code: 'PROBE_REFUSED',
      message: 'refused on purpose',
    });
    const invalid = ask('probe.invalid', {});
    await expect(invalid).rejects.toBeInstanceOf(InvalidInputError);
    await expect(invalid).rejects.toMatchObject({ diagnostics: [{ file: 'x.yaml', line: 3, message: 'bad' }] });
  });

  it('an unexpected error is INTERNAL in the answer and reported to the service, and the server goes on', async () => {
    await expect(ask('probe.crash', {})).rejects.toMatchObject({ code: 'INTERNAL', message: 'internal error: boom' });
    expect(internal).toContain('probe.crash: boom');
    expect(await ask('probe.echo', 1)).toEqual({ echoed: 1 });
  });

  it('a body that is not JSON, not UTF-8 or nested too deep is refused as invalid input, never a crash', async () => {
    const refusal = (r: unknown) => (r as { error: { code: string; message: string } }).error;
    expect(refusal(await raw('probe.echo', new TextEncoder().encode('{"a":')))).toMatchObject({
      code: 'INVALID_INPUT',
      message: 'the probe.echo request: not valid JSON (it ends too early)',
    });
    expect(refusal(await raw('probe.echo', Uint8Array.from([0xff, 0xfe, 0x00])))).toMatchObject({
      code: 'INVALID_INPUT',
      message: 'the probe.echo request is not UTF-8 text',
    });
    const deep = '['.repeat(20_000) + ']'.repeat(20_000);
    expect(refusal(await raw('probe.echo', new TextEncoder().encode(deep)))).toMatchObject({
      code: 'INVALID_INPUT',
      message: 'the probe.echo request: nested deeper than 64 levels (mappings and lists inside each other), the bound',
    });
    expect(await ask('probe.echo', 'still here')).toEqual({ echoed: 'still here' });
  });

  it('an answer larger than max_payload comes in chunks and request() puts it together', async () => {
    const answer = (await ask('probe.big', { bytes: 300_000 })) as string;
    expect(answer.length).toBe(300_000);
    expect(answer).toBe('x'.repeat(300_000));
  });

  it('an answer larger than the chunks allow is refused as REPLY_TOO_LARGE, not dropped', async () => {
    await expect(ask('probe.big', { bytes: 5_000_000 })).rejects.toMatchObject({
      code: 'REPLY_TOO_LARGE',
      message: expect.stringContaining('ask for less'),
    });
  });

  it('nobody on the subject: the service is named, with what to do', async () => {
    await expect(ask('probe.missing', {})).rejects.toMatchObject({
      code: 'TEST_SERVICE_UNAVAILABLE',
      message: `test-service did not answer on ${prefix}.probe.missing: start it`,
    });
  });

  it('replicas in one queue group: each request is answered once', async () => {
    await startApp();
    await serverConnection.flush();
    const inbox = createInbox();
    const replies = new Map<string, number>();
    const sub = client.subscribe(`${inbox}.>`, {
      callback: (_err, msg) => void replies.set(msg.subject, (replies.get(msg.subject) ?? 0) + 1),
    });
    for (let i = 0; i < 20; i++) client.publish(`${prefix}.probe.echo`, JSON.stringify(i), { reply: `${inbox}.${i}` });
    await waitUntil(() => replies.size >= 20, 'answers to all 20 requests', 5000, 20);
    await new Promise((r) => setTimeout(r, 300)); // a second answer would be here by now
    sub.unsubscribe();
    expect([...replies.values()]).toEqual(Array(20).fill(1));
  });
});
