import { createServer, type Server } from 'node:net';
import { connectNats } from './nats-connection';
import { connectRedis, describeFailure } from './redis-connection';
import { startPrivateRedis } from './testing/private-servers';
import { testServices } from './testing/test-services';

/** A port nothing listens on: bind one, note it, close it. */
async function closedPort(): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('connectNats', () => {
  it('connects under the given client name, with the credentials file', async () => {
    const { natsUrl, natsCreds } = testServices();
    const nc = await connectNats({ natsUrl, natsCreds }, 'granule-messaging-test');
    try {
      expect(nc.info?.jetstream).toBe(true);
    } finally {
      await nc.close();
    }
  });

  it('a closed port fails with NATS_UNREACHABLE naming the URL, the reason and the fix', async () => {
    const url = `nats://127.0.0.1:${await closedPort()}`;
    await expect(connectNats({ natsUrl: url }, 'x', { timeoutMs: 1000 })).rejects.toMatchObject({
      code: 'NATS_UNREACHABLE',
      message: expect.stringMatching(
        new RegExp(
          `^cannot reach NATS at ${url}: connection refused.* — start it \\(tools/setup.sh\\) or set GRANULE_NATS_URL$`,
        ),
      ),
    });
  });
});

describe('connectRedis', () => {
  it('connects and answers commands', async () => {
    const redis = await connectRedis(testServices().redisUrl);
    try {
      expect(await redis.ping()).toBe('PONG');
    } finally {
      redis.disconnect();
    }
  });

  it('a closed port fails with REDIS_UNREACHABLE and the socket error as the reason', async () => {
    const port = await closedPort();
    const url = `redis://127.0.0.1:${port}`;
    await expect(connectRedis(url, { timeoutMs: 2000 })).rejects.toMatchObject({
      code: 'REDIS_UNREACHABLE',
      message: `cannot reach Redis at ${url}: connect ECONNREFUSED 127.0.0.1:${port} — start it (tools/setup.sh) or set GRANULE_REDIS_URL`,
    });
  });
});

describe('describeFailure', () => {
  it('says Redis does not answer for a command sent while the connection is down, and keeps other messages', async () => {
    const server = await startPrivateRedis();
    const redis = await connectRedis(server.url);
    try {
      await server.halt();
      const err = await redis.get('k').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(describeFailure(err)).toBe('Redis does not answer: the connection is down and the client is reconnecting');
      expect(describeFailure(new Error('connect ECONNREFUSED 127.0.0.1:5432'))).toBe(
        'connect ECONNREFUSED 127.0.0.1:5432',
      );
    } finally {
      redis.disconnect();
      await server.stop();
    }
  }, 30_000);
});
