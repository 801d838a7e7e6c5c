import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@granule/event-store';
import { testServicesEnv } from '@granule/messaging';
import { loadConfigStoreConfig } from '../config/config.service';
import { startConfigStore, type ConfigStoreRuntime } from '../config-store.runtime';
import { ALL_MIGRATIONS } from '../migrations';
import { CONFIG_STORE_ENTITIES } from '../persistence/config-store.entities';

/** A port nothing listens on right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export interface TestConfigStore {
  db: TestDatabase;
  runtime: ConfigStoreRuntime;
  /** A subject prefix of this config-store alone (`test.<hex>`), unless one was given. */
  prefix: string;
  /** `http://127.0.0.1:<port>` when started with `http`, else undefined. */
  base?: string;
  /** Stops the service, then drops its database. */
  stop(): Promise<void>;
}

export interface TestConfigStoreOptions {
  prefix?: string;
  /** Serve HTTP on a free loopback port with this API token. */
  http?: { token: string };
  /** More variables (e.g. GRANULE_NATS_URL, GRANULE_NATS_CREDS). */
  env?: Record<string, string>;
  /** What startConfigStore takes besides the config (default: no Nest log, errors ignored). */
  logError?: Parameters<typeof startConfigStore>[1];
  runtime?: Parameters<typeof startConfigStore>[2];
}

/**
 * A real config-store for a test: its own database `<database>_<hex>` with every migration, no
 * preinstalled release, on the tests' NATS and Redis (tools/setup.sh; as the test harness) unless
 * `env` says otherwise.
 */
export async function startTestConfigStore<O extends TestConfigStoreOptions>(
  database: string,
  options: O = {} as O,
): Promise<TestConfigStore & (O extends { http: object } ? { base: string } : unknown)> {
  const prefix = options.prefix ?? `test.${randomBytes(4).toString('hex')}`;
  const db = await createTestDatabase(database, { migrations: ALL_MIGRATIONS, entities: CONFIG_STORE_ENTITIES });
  const port = options.http ? await freePort() : undefined;
  try {
    const config = loadConfigStoreConfig({
      ...testServicesEnv(),
      GRANULE_DATABASE_URL: db.url,
      GRANULE_SUBJECT_PREFIX: prefix,
      GRANULE_PREINSTALLED_RELEASE: '',
      ...(options.http
        ? { GRANULE_API_TOKEN: options.http.token, GRANULE_HTTP_HOST: '127.0.0.1', GRANULE_HTTP_PORT: String(port) }
        : {}),
      ...options.env,
    });
    const runtime = await startConfigStore(config, options.logError ?? (() => undefined), {
      logger: false,
      ...options.runtime,
    });
    if (options.http) await runtime.listenHttp();
    const started: TestConfigStore = {
      db,
      runtime,
      prefix,
      ...(port === undefined ? {} : { base: `http://127.0.0.1:${port}` }),
      stop: async () => {
        await runtime.stop();
        await db.drop();
      },
    };
    // With `http`, base is set (the type says so to the caller).
    return started as TestConfigStore & (O extends { http: object } ? { base: string } : unknown);
  } catch (err) {
    await db.drop();
    throw err;
  }
}
