import type { NatsConnection } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import { connectNats } from '@granule/config-store-client';
import { openPluginSource } from '@granule/plugin-files';
import type { ConfigStoreConfig } from './config/config.service';
import { openConfigDatabase } from './persistence/database';
import { ConfigStoreApi } from './transport/config-store.api';
import { NatsRpcServer } from './transport/nats-rpc.server';
import type { ErrorLog } from './transport/nats-rpc.server';

/** The running service without HTTP: database, migrations, basic release, NATS API. */
export interface ConfigStoreRuntime {
  dataSource: DataSource;
  nc: NatsConnection;
  api: ConfigStoreApi;
  server: NatsRpcServer;
  /** Start-up facts for the log (migrations run, basic release). */
  notes: string[];
  stop(): Promise<void>;
}

/**
 * Starts the config-store's core from validated config. Throws service-kit's database errors /
 * `NatsUnavailableError` with one-line messages; cleans up what it opened on failure.
 */
export async function startConfigStore(config: ConfigStoreConfig, logError: ErrorLog): Promise<ConfigStoreRuntime> {
  const notes: string[] = [];
  const dataSource = await openConfigDatabase(config.databaseUrl, {
    create: config.createDatabase,
    runMigrations: config.runMigrations,
    onMigrated: (ran) => notes.push(ran.length > 0 ? `migrations: ran ${ran.join(', ')}` : 'migrations: up to date'),
  });
  let nc: NatsConnection | undefined;
  try {
    const api = new ConfigStoreApi(dataSource, config.subjectPrefix);
    if (config.preinstalledRelease) {
      const source = config.preinstalledRelease;
      notes.push(await api.catalog.preinstallRelease(() => openPluginSource(source), source));
    }
    nc = await connectNats(config.natsUrl, { name: 'config-store' });
    const server = new NatsRpcServer(nc, api, config.subjectPrefix, logError);
    await server.start();
    const conn = nc;
    return {
      dataSource,
      nc: conn,
      api,
      server,
      notes,
      async stop() {
        await server.stop();
        await conn.drain();
        await dataSource.destroy();
      },
    };
  } catch (err) {
    await nc?.close().catch(() => undefined);
    await dataSource.destroy().catch(() => undefined);
    throw err;
  }
}
