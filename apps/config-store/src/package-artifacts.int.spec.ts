import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectTestNats } from '@granule/messaging';
import type { NatsConnection } from '@nats-io/transport-node';
import { ArtifactStore, artifactsBucket, storePluginArtifact } from '@granule/artifacts';
import { ConfigStoreClient, readPluginSourceFiles } from '@granule/config-store-client';
import { type TestDatabase } from '@granule/event-store';
import { type ConfigStoreRuntime } from './config-store.runtime';
import { PluginEntity } from './persistence/config-store.entities';
import { startTestConfigStore } from './testing/test-config-store';

const PLUGIN_DIR = path.resolve(__dirname, '../../../examples/plugins/example-v4');

// Real PostgreSQL and NATS: config-store checks the deployment files an install names, and keeps
// a removed plugin's files while a run that may use them is not ended (ADR 0026).
describe('config-store and the artifacts bucket', () => {
  let db: TestDatabase;
  let runtime: ConfigStoreRuntime;
  let nc: NatsConnection;
  let client: ConfigStoreClient;
  let store: ArtifactStore;
  const prefix = `test.${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    ({ db, runtime } = await startTestConfigStore('config_artifacts', { prefix }));
    nc = await connectTestNats('package-artifacts-test');
    client = new ConfigStoreClient(nc, { prefix });
    store = new ArtifactStore(nc, prefix);
  }, 30_000);

  afterAll(async () => {
    await jetstreamManager(nc)
      .then((jsm) => jsm.streams.delete(`OBJ_${artifactsBucket(prefix)}`))
      .catch(() => undefined);
    await nc?.drain();
    await runtime?.stop();
    await db?.drop();
  });

  jest.setTimeout(30_000);

  const event = (stream: string, version: number, type: string): Promise<unknown> =>
    db.dataSource.query(
      `INSERT INTO granule_events (stream_id, stream_version, type, data) VALUES ($1, $2, $3, '{}')`,
      [stream, version, type],
    );

  it('refuses an install naming deployment files the bucket does not hold, and records nothing', async () => {
    const body = await readPluginSourceFiles(PLUGIN_DIR);
    const refused = await client
      .request('plugin.install', { ...body, artifact_digest: 'b'.repeat(64), artifact_size: 10 })
      .catch((e: unknown) => e as { code: string; message: string });
    expect(refused).toMatchObject({ code: 'ARTIFACT_NOT_FOUND' });
    expect((refused as { message: string }).message).toMatch(
      /artifact bbbbbbbbbbbb… in object store \S+_ARTIFACTS does not exist/,
    );
    expect(await db.dataSource.getRepository(PluginEntity).count()).toBe(0);
  });

  it("keeps a removed plugin's files until the run that was going on has ended, then deletes them", async () => {
    const artifact = await storePluginArtifact(store, PLUGIN_DIR);
    if (!artifact) throw new Error('example-v4 has deployment_scripts/');
    const body = await readPluginSourceFiles(PLUGIN_DIR);
    await client.request('plugin.install', { ...body, artifact_digest: artifact.digest, artifact_size: artifact.size });
    const [row] = await db.dataSource.getRepository(PluginEntity).find();
    expect(row.artifactDigest).toBe(artifact.digest);

    // A run that started before the removal and has not ended; one that ended does not count.
    await event('run-done', 1, 'DeploymentRequested');
    await event('run-done', 2, 'DeploymentSucceeded');
    await event('run-going', 1, 'DeploymentRequested');
    await client.request('plugin.remove', { id: 'example-v4' });
    expect(await store.info(artifact.digest)).toEqual(artifact);
    const retention = runtime.api.retention;
    if (!retention) throw new Error('config-store runs with its artifacts bucket');
    expect(await retention.sweep()).toEqual({
      deleted: [],
      kept: [],
      waiting: [{ digest: artifact.digest, run: 'run-going' }],
    });
    expect(await store.info(artifact.digest)).toEqual(artifact);

    await event('run-going', 2, 'DeploymentFailed');
    expect(await retention.sweep()).toEqual({ deleted: [artifact.digest], kept: [], waiting: [] });
    expect(await store.info(artifact.digest)).toBeUndefined();
  });

  it('keeps the files of a removed plugin that is installed again', async () => {
    const artifact = await storePluginArtifact(store, PLUGIN_DIR);
    if (!artifact) throw new Error('example-v4 has deployment_scripts/');
    const body = { ...(await readPluginSourceFiles(PLUGIN_DIR)), artifact_digest: artifact.digest };
    await client.request('plugin.install', body);
    await event('run-later', 1, 'DeploymentRequested');
    await client.request('plugin.remove', { id: 'example-v4' });
    await client.request('plugin.install', body);
    await event('run-later', 2, 'DeploymentSucceeded');
    expect(await runtime.api.retention?.sweep()).toEqual({ deleted: [], kept: [artifact.digest], waiting: [] });
    expect(await store.info(artifact.digest)).toEqual(artifact);
  });
});
