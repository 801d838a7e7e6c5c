import type { NatsConnection } from '@nats-io/transport-node';
import { connectNats } from './nats-connection';
import { ReconnectWaits } from './reconnect-waits';
import { startPrivateNats, type PrivateServer } from './testing/private-servers';

jest.setTimeout(60_000);

describe('ReconnectWaits (a NATS server of its own, restarted)', () => {
  let nats: PrivateServer;
  let nc: NatsConnection;

  beforeAll(async () => {
    nats = await startPrivateNats();
    nc = await connectNats({ natsUrl: nats.url }, 'reconnect-waits-int-test');
  });

  afterAll(async () => {
    await nc?.close();
    await nats?.stop();
  });

  it('ends a wait after its time while the connection stays up', async () => {
    await expect(new ReconnectWaits(nc).wait(50)).resolves.toBe('elapsed');
  });

  it('ends every pending wait when the client reconnects after an outage, long before their time', async () => {
    const waits = new ReconnectWaits(nc);
    const ended: string[] = [];
    const pending = [waits.wait(10 * 60_000), waits.wait(10 * 60_000)].map((p) =>
      p.then((how) => void ended.push(how)),
    );
    await nats.halt();
    await new Promise((r) => setTimeout(r, 300));
    expect(ended).toEqual([]);
    await nats.resume();
    await Promise.all(pending);
    expect(ended).toEqual(['reconnected', 'reconnected']);
    // A wait begun after the reconnection runs its own time again.
    await expect(waits.wait(50)).resolves.toBe('elapsed');
  });
});
