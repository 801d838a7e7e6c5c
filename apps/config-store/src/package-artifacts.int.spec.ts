import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { ArtifactStore, MAX_ARTIFACT_BYTES, artifactsBucket, storePluginArtifact } from '@granule/artifacts';
import { connectTestNats } from '@granule/messaging';
import { ConfigStoreClient, readPluginSourceFiles } from '@granule/config-store-client';
import { EventStore, type TestDatabase } from '@granule/event-store';
import { PlanStore } from '@granule/plan-store';
import { buildPlan } from '@granule/planner';
import { assertNoErrors, parseTaskFile } from '@granule/task-model';
import { stringify } from 'yaml';
import { type ConfigStoreRuntime } from './config-store.runtime';
import { PluginEntity } from './persistence/config-store.entities';
import { ARTIFACT_REMOVAL_HOLD_MS, ArtifactRetention } from './services/artifact-retention';
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
  let base: string;
  const TOKEN = 'artifacts-test-token';
  const prefix = `test.${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    ({ db, runtime, base } = await startTestConfigStore('config_artifacts', { prefix, http: { token: TOKEN } }));
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

  const event = (stream: string, type: string, data: Record<string, unknown> = {}): Promise<unknown> =>
    new EventStore(db.dataSource).appendToStream(stream, [{ type, data }], { expectedVersion: 'any' });

  /** Stores a plan of one shell task on node 1, naming `digest` as its package (or no package). */
  const planNaming = async (digest?: string): Promise<string> => {
    const task = {
      id: 'configure',
      type: 'shell',
      version: '2.0.0',
      roles: '*',
      parameters: {
        cmd: './configure.sh',
        ...(digest ? { $package: { name: 'example-v4', version: '1.0.0', digest } } : {}),
      },
    };
    const tasks = assertNoErrors(parseTaskFile(stringify([task]), 'deployment_tasks.yaml'));
    return (await new PlanStore(db.dataSource).save(buildPlan({ tasks, nodes: [{ uid: '1', roles: ['x'] }] }))).planId;
  };

  /** Installs example-v4 with its deployment files; returns them. */
  const install = async (): Promise<{ digest: string; size: number }> => {
    const artifact = await storePluginArtifact(store, PLUGIN_DIR);
    if (!artifact) throw new Error('example-v4 has deployment_scripts/');
    const body = await readPluginSourceFiles(PLUGIN_DIR);
    await client.request('plugin.install', { ...body, artifact_digest: artifact.digest, artifact_size: artifact.size });
    return artifact;
  };

  /** A sweep past the command expiry bound, as a day after the removal. */
  const retentionAfterHold = (): ArtifactRetention => new ArtifactRetention(db.dataSource, store, { holdMs: 0 });

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
    const artifact = await install();
    const [row] = await db.dataSource.getRepository(PluginEntity).find();
    expect(row.artifactDigest).toBe(artifact.digest);

    // A run still being planned (no plan yet) and not ended; one that ended does not count.
    await event('run-done', 'DeploymentRequested');
    await event('run-done', 'DeploymentSucceeded');
    await event('run-going', 'DeploymentRequested');
    await client.request('plugin.remove', { id: 'example-v4' });
    expect(await store.info(artifact.digest)).toEqual(artifact);
    const retention = retentionAfterHold();
    expect(await retention.sweep()).toEqual({
      deleted: [],
      kept: [],
      waiting: [{ digest: artifact.digest, run: 'run-going' }],
    });
    expect(await store.info(artifact.digest)).toEqual(artifact);

    await event('run-going', 'DeploymentFailed');
    expect(await retention.sweep()).toEqual({ deleted: [artifact.digest], kept: [], waiting: [] });
    expect(await store.info(artifact.digest)).toBeUndefined();
  });

  it('keeps the files of a removed plugin that is installed again', async () => {
    const artifact = await storePluginArtifact(store, PLUGIN_DIR);
    if (!artifact) throw new Error('example-v4 has deployment_scripts/');
    const body = { ...(await readPluginSourceFiles(PLUGIN_DIR)), artifact_digest: artifact.digest };
    await client.request('plugin.install', body);
    await event('run-later', 'DeploymentRequested');
    await client.request('plugin.remove', { id: 'example-v4' });
    await client.request('plugin.install', body);
    await event('run-later', 'DeploymentSucceeded');
    expect(await runtime.api.retention?.sweep()).toEqual({ deleted: [], kept: [artifact.digest], waiting: [] });
    expect(await store.info(artifact.digest)).toEqual(artifact);
    await client.request('plugin.remove', { id: 'example-v4' });
  });

  it('keeps removed files for the command expiry bound even when no run is going on', async () => {
    // The installed-again test removed example-v4 last, a moment ago.
    const [removal] = (await db.dataSource.query(`SELECT digest, removed_at FROM config_artifact_removals`)) as {
      digest: string;
      removed_at: Date;
    }[];
    const until = new Date(new Date(removal.removed_at).getTime() + ARTIFACT_REMOVAL_HOLD_MS).toISOString();
    expect(ARTIFACT_REMOVAL_HOLD_MS).toBe((86_400 + 10) * 1000);
    expect(await runtime.api.retention?.sweep()).toEqual({
      deleted: [],
      kept: [],
      waiting: [{ digest: removal.digest, until }],
    });
    expect(await store.info(removal.digest)).toBeDefined();
    expect(await retentionAfterHold().sweep()).toEqual({ deleted: [removal.digest], kept: [], waiting: [] });
  });

  it('keeps the files for a run recorded after the removal whose plan names them (a deploy or retry in flight)', async () => {
    const artifact = await install();
    await client.request('plugin.remove', { id: 'example-v4' });
    // Recorded after the removal: a retry reruns its old plan, a deploy sent before was planned with it.
    await event('run-retry', 'DeploymentRequested', { retryOf: { runId: 'old', failedOnly: true } });
    await event('run-retry', 'PlanAccepted', { planId: await planNaming(artifact.digest) });
    await event('run-other', 'DeploymentRequested');
    await event('run-other', 'PlanAccepted', { planId: await planNaming() });
    const retention = retentionAfterHold();
    expect(await retention.sweep()).toEqual({
      deleted: [],
      kept: [],
      waiting: [{ digest: artifact.digest, run: 'run-retry' }],
    });
    expect(await store.info(artifact.digest)).toEqual(artifact);

    // A run whose plan does not name the package never held it; once the retry ends it goes.
    await event('run-retry', 'DeploymentSucceeded');
    expect(await retention.sweep()).toEqual({ deleted: [artifact.digest], kept: [], waiting: [] });
    expect(await store.info(artifact.digest)).toBeUndefined();
    await event('run-other', 'DeploymentSucceeded');
  });

  it('keeps the files for a stopped run (it can be resumed) until it has ended', async () => {
    const artifact = await install();
    await event('run-stopped', 'DeploymentRequested');
    await event('run-stopped', 'PlanAccepted', { planId: await planNaming(artifact.digest) });
    await event('run-stopped', 'DeploymentStopped');
    await client.request('plugin.remove', { id: 'example-v4' });
    const retention = retentionAfterHold();
    expect(await retention.sweep()).toEqual({
      deleted: [],
      kept: [],
      waiting: [{ digest: artifact.digest, run: 'run-stopped' }],
    });
    await event('run-stopped', 'DeploymentResumed');
    expect((await retention.sweep()).waiting).toEqual([{ digest: artifact.digest, run: 'run-stopped' }]);
    expect(await store.info(artifact.digest)).toEqual(artifact);
    await event('run-stopped', 'DeploymentFailed');
    expect(await retention.sweep()).toEqual({ deleted: [artifact.digest], kept: [], waiting: [] });
  });

  /** `PUT /artifacts/<digest>` declaring `length` in Content-Length and sending `body` (maybe less). */
  const put = (digest: string, length: number, body: Buffer): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const req = http.request(`${base}/artifacts/${digest}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-length': String(length) },
      });
      req.on('response', (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString('utf8')));
        res.on('end', () => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, body: text });
        });
      });
      req.on('error', reject);
      req.write(body);
    });

  it('refuses an HTTP upload whose Content-Length is over the size limit with 413, before reading it', async () => {
    const digest = 'e'.repeat(64);
    const refused = await put(
      digest,
      MAX_ARTIFACT_BYTES + 64 * 1024 * 1024,
      Buffer.from('the first bytes of a huge tar'),
    );
    expect(refused.status).toBe(413);
    expect(JSON.parse(refused.body)).toEqual({
      error: {
        code: 'ARTIFACT_TOO_LARGE',
        message:
          'the deployment files are too large: expected at most 512 MiB (the package size limit), got 576 MiB in Content-Length',
      },
    });
    expect(await store.info(digest)).toBeUndefined();

    // Within the limit the same route stores what it is sent.
    const tar = randomBytes(5000);
    const good = createHash('sha256').update(tar).digest('hex');
    const stored = await put(good, tar.length, tar);
    expect([stored.status, JSON.parse(stored.body)]).toEqual([201, { digest: good, size: 5000 }]);
    expect(await store.info(good)).toEqual({ digest: good, size: 5000 });
  });
});
