import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { parse, stringify } from 'yaml';
import { connectTestNats } from '@granule/messaging';
import type { NatsConnection } from '@nats-io/transport-node';
import { InvalidInputError } from '@granule/core';
import { NO_RELEASE_MESSAGE } from '@granule/config-model';
import { ConfigStoreClient, readPluginSourceFiles } from '@granule/config-store-client';
import { createTestDatabase } from '@granule/event-store';
import type { TestDatabase } from '@granule/event-store';
import { openPluginSource } from '@granule/plugin-files';
import type { ConfigStoreRuntime } from './config-store.runtime';
import { ALL_MIGRATIONS } from './migrations';
import { CONFIG_STORE_ENTITIES, EnvironmentEntity, ReleaseEntity } from './persistence/config-store.entities';
import { startTestConfigStore } from './testing/test-config-store';

const root = path.resolve(__dirname, '../../..');
const RELEASE_DIR = path.join(root, 'examples/releases/example-release');
const PLUGIN_DIR = path.join(root, 'examples/plugins/example-v5');
const STRATEGY_FILE = path.join(root, 'examples/strategies/deployment-strategy.yaml');

/** Rejection of a client call: its class, code and message. */
async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string; diagnostics?: unknown[] }> {
  try {
    await p;
  } catch (err) {
    const e = err as { code: string; message: string; diagnostics?: unknown[] };
    return err instanceof InvalidInputError
      ? { code: e.code, message: e.message, diagnostics: e.diagnostics }
      : { code: e.code, message: e.message };
  }
  throw new Error('expected the request to be refused');
}

// A release graph with two chains, so seed 002's filters have exact answers:
// controller: a -> b -> c; compute: d -> e.
const CHAIN_TASKS = [
  {
    id: 'a',
    type: 'shell',
    version: '2.0.0',
    roles: ['controller'],
    requires: ['deploy_start'],
    required_for: ['deploy_end'],
    parameters: { cmd: 'true' },
  },
  {
    id: 'b',
    type: 'shell',
    version: '2.0.0',
    roles: ['controller'],
    requires: ['a'],
    required_for: ['deploy_end'],
    parameters: { cmd: 'true' },
  },
  {
    id: 'c',
    type: 'shell',
    version: '2.0.0',
    roles: ['controller'],
    requires: ['b'],
    required_for: ['deploy_end'],
    parameters: { cmd: 'true' },
  },
  {
    id: 'd',
    type: 'shell',
    version: '2.0.0',
    roles: ['compute'],
    requires: ['deploy_start'],
    required_for: ['deploy_end'],
    parameters: { cmd: 'true' },
  },
  {
    id: 'e',
    type: 'shell',
    version: '2.0.0',
    roles: ['compute'],
    requires: ['d'],
    required_for: ['deploy_end'],
    parameters: { cmd: 'true' },
  },
];

describe('config-store over NATS (real PostgreSQL and NATS)', () => {
  let db: TestDatabase;
  let runtime: ConfigStoreRuntime;
  let nc: NatsConnection;
  let client: ConfigStoreClient;
  const prefix = `test.${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    ({ db, runtime } = await startTestConfigStore('config_store', { prefix }));
    nc = await connectTestNats('config-store-test');
    client = new ConfigStoreClient(nc, { prefix });
  });

  afterAll(async () => {
    await nc?.drain();
    await runtime?.stop();
    await db?.drop();
  });

  it('no release - refuses to create an environment and says how to install one', async () => {
    const r = await refusal(client.request('env.create', { name: 'prod' }));
    expect(r).toEqual({ code: 'CONFIG_NO_RELEASE', message: NO_RELEASE_MESSAGE });
    expect(NO_RELEASE_MESSAGE).toBe(
      'no release is installed: install one with granule release install <DIR|FILE.tar.gz>',
    );
    expect(await db.dataSource.getRepository(EnvironmentEntity).count()).toBe(0);
  });

  it('release install - validates the release plugin and stores each graph', async () => {
    const result = await client.request('release.install', await readPluginSourceFiles(RELEASE_DIR));
    expect(result.kind).toBe('release');
    expect(result.releases.map((r) => [r.id, r.name, r.version, r.operating_system, r.graphs])).toEqual([
      [1, 'example-release', '1.0.0', 'debian', { default: 4, provisioning: 1 }],
    ]);
    const again = await refusal(client.request('release.install', await readPluginSourceFiles(RELEASE_DIR)));
    expect(again).toEqual({
      code: 'CONFIG_ALREADY_EXISTS',
      message:
        "release 'example-release' version 1.0.0 is already installed (id 1); remove it first with granule release remove 1",
    });
    expect((await client.request('release.list', {})).map((r) => r.name)).toEqual(['example-release']);
  });

  it('release install - an invalid plugin is refused with every problem and nothing is stored', async () => {
    const r = await refusal(
      client.request('release.install', {
        source: 'broken',
        files: { 'metadata.yaml': 'name: broken\nreleases: []\n' },
      }),
    );
    expect(r.code).toBe('INVALID_INPUT');
    expect(r.message).toContain("missing required field 'package_version'");
    expect(await db.dataSource.getRepository(ReleaseEntity).count()).toBe(1);
  });

  it('release install - is one transaction: when the second release exists, the first is not stored either', async () => {
    const body = await readPluginSourceFiles(RELEASE_DIR);
    const meta = parse(body.files['metadata.yaml']) as { releases: Record<string, unknown>[] };
    meta.releases = [{ ...meta.releases[0], release_name: 'other-release' }, meta.releases[0]];
    body.files['metadata.yaml'] = stringify(meta);
    const r = await refusal(client.request('release.install', body));
    expect(r.code).toBe('CONFIG_ALREADY_EXISTS');
    expect((await db.dataSource.getRepository(ReleaseEntity).find()).map((x) => x.name)).toEqual(['example-release']);
  });

  it('plugin install - refuses a release plugin and names the right command', async () => {
    const r = await refusal(client.request('plugin.install', await readPluginSourceFiles(RELEASE_DIR)));
    expect(r).toEqual({
      code: 'CONFIG_WRONG_KIND',
      message: `${RELEASE_DIR} is a release plugin (a release has is_release: true): install it with granule release install ${RELEASE_DIR}`,
    });
  });

  it('environments - create with the only release, enable a plugin, refuse removing the plugin while enabled', async () => {
    const plugin = await client.request('plugin.install', await readPluginSourceFiles(PLUGIN_DIR));
    expect(plugin.plugin?.releases).toEqual([{ os: 'debian', version: '1.0.0', graphs: { default: 5 } }]);
    const env = await client.request('env.create', {
      name: 'prod',
      settings: { common: { debug: { value: false } } },
      plugins: ['example-v5'],
    });
    expect([env.id, env.name, env.status, env.release, env.plugins.map((p) => p.name)]).toEqual([
      1,
      'prod',
      'new',
      { id: 1, name: 'example-release', version: '1.0.0' },
      ['example-v5'],
    ]);
    expect(await refusal(client.request('plugin.remove', { id: 'example-v5' }))).toEqual({
      code: 'CONFIG_IN_USE',
      message:
        "plugin 'example-v5' is enabled in environment 'prod': disable it there first (granule plugin disable example-v5 --env prod)",
    });
    expect(await refusal(client.request('release.remove', { id: '1' }))).toEqual({
      code: 'CONFIG_IN_USE',
      message: "release 'example-release' (id 1) is used by environment 'prod': an environment keeps its release",
    });
    expect(await refusal(client.request('env.create', { name: 'prod' }))).toEqual({
      code: 'CONFIG_ALREADY_EXISTS',
      message: "environment 'prod' already exists",
    });
  });

  it('environments - set status and patch settings by dotted path; a bad status names the field and the choices', async () => {
    const env = await client.request('env.update', {
      id: 'prod',
      status: 'operational',
      settings_patch: { 'common.debug.value': true, 'storage.ceph.value': true },
    });
    expect([env.status, env.settings]).toEqual([
      'operational',
      { common: { debug: { value: true } }, storage: { ceph: { value: true } } },
    ]);
    const bad = await refusal(client.request('env.update', { id: 'prod', status: 'running' as never }));
    expect(bad.message).toBe(
      'status: must be one of the following values: new, deployment, operational, partially_deployed, error, stopped (got "running")',
    );
  });

  it('API errors - every bad field is named, unknown fields are refused, an unknown id lists the known ones', async () => {
    const r = await refusal(
      client.request('node.add', { uid: 'bad uid', hostname: '', roles: 'controller' as never, color: 'red' } as never),
    );
    expect(r.message.split('\n')).toEqual([
      "color: unknown field 'color'",
      `uid: expected a node uid of 1 to 63 letters, digits, '_' or '-', starting with a letter or digit, got "bad uid"`,
      'hostname: should not be empty (got "")',
      'roles: must be an array (got "controller")',
    ]);
    expect(await refusal(client.request('env.get', { id: '42' }))).toEqual({
      code: 'CONFIG_NOT_FOUND',
      message: "environment '42' does not exist (known: 1 prod)",
    });
    // Only the API's operations are answered: another subject finds nobody.
    await expect(client.request('node.explode' as never, {} as never)).rejects.toMatchObject({
      code: 'CONFIG_STORE_UNAVAILABLE',
      message: `config-store did not answer on ${prefix}.config.node.explode: start it with npm run start:config-store`,
    });
    const notJson = await nc.request(`${prefix}.config.node.list`, '{oops');
    expect((notJson.json() as { error: { code: string } }).error.code).toBe('INVALID_INPUT');
  });

  it('nodes - add, assign with pending roles, tag, label, rack, list per environment, remove', async () => {
    await client.request('node.add', {
      uid: 'node-1',
      hostname: 'ctl01',
      address: '10.0.0.11',
      labels: { zone: 'a' },
      rack: 'r1',
    });
    await client.request('node.add', {
      uid: 'node-2',
      hostname: 'cmp01',
      roles: ['compute'],
      environment: 'prod',
      status: 'ready',
    });
    const assigned = await client.request('node.assign', { uid: 'node-1', environment: 'prod', roles: ['controller'] });
    expect([assigned.environment, assigned.roles, assigned.pending_roles, assigned.status]).toEqual([
      1,
      [],
      ['controller'],
      'discover',
    ]);
    await client.request('node.update', { uid: 'node-1', add_tags: ['ssd', 'control'] });
    await client.request('node.update', {
      uid: 'node-1',
      remove_tags: ['ssd'],
      labels: { zone: null, tier: 'gold' },
      rack: 'r2',
    });
    const n = await client.request('node.get', { uid: 'node-1' });
    expect([n.tags, n.labels, n.rack]).toEqual([['control'], { tier: 'gold' }, 'r2']);
    expect((await client.request('node.list', { environment: 'prod' })).map((x) => x.uid)).toEqual([
      'node-1',
      'node-2',
    ]);
    expect((await client.request('env.get', { id: 'prod' })).nodes).toEqual(['node-1', 'node-2']);
    const badLabel = await refusal(client.request('node.update', { uid: 'node-1', labels: { zone: 3 as never } }));
    expect(badLabel.message).toBe('labels.zone: expected a string (or null to remove it), got 3');
    await client.request('node.add', { uid: 'node-3', hostname: 'tmp', status: 'deploying' });
    expect(await refusal(client.request('node.remove', { uid: 'node-3' }))).toEqual({
      code: 'CONFIG_IN_USE',
      message: "node 'node-3' is deploying; wait until it is done (or stop the deployment) before removing it",
    });
    await client.request('node.update', { uid: 'node-3', status: 'offline' });
    expect((await client.request('node.remove', { uid: 'node-3' })).uid).toBe('node-3');
    expect(await refusal(client.request('node.get', { uid: 'node-3' }))).toEqual({
      code: 'CONFIG_NOT_FOUND',
      message: "node 'node-3' does not exist",
    });
  });

  it('deployment_tasks - PUT a release graph, then start / end filters return the subgraph in plan order', async () => {
    const put = await client.request('tasks.put', { scope: 'release', id: 'example-release', tasks: CHAIN_TASKS });
    expect(put.tasks.map((t) => t.id)).toEqual(['a', 'b', 'c', 'd', 'e']);
    const ids = async (filter: { start?: string; end?: string }) =>
      (await client.request('tasks.get', { scope: 'release', id: '1', ...filter })).tasks.map((t) => t.id);
    expect(await ids({})).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(await ids({ start: 'b' })).toEqual(['b', 'c']);
    expect(await ids({ end: 'b' })).toEqual(['a', 'b']);
    expect(await ids({ start: 'a', end: 'b' })).toEqual(['a', 'b']);
    expect(await ids({ end: 'e' })).toEqual(['d', 'e']);
    // The record comes back as it was written.
    expect((await client.request('tasks.get', { scope: 'release', id: '1', start: 'e' })).tasks).toEqual([
      CHAIN_TASKS[4],
    ]);
    expect(await refusal(client.request('tasks.get', { scope: 'release', id: '1', start: 'zz' }))).toMatchObject({
      code: 'INVALID_INPUT',
      message: "start: no task has this id ('zz')",
    });
  });

  it('deployment_tasks - an environment plans over its own nodes, plugins and overrides', async () => {
    const envIds = async (filter: { start?: string; end?: string }) =>
      (await client.request('tasks.get', { scope: 'environment', id: 'prod', ...filter })).tasks.map((t) => t.id);
    // After e comes deploy_end, then the plugin's post-deployment check on the controller.
    expect(await envIds({ start: 'd' })).toEqual(['d', 'e', 'example-v5-check']);
    // The plugin's task is attributed to it (the planner orders equal stage priorities by plugin name).
    expect((await client.request('tasks.get', { scope: 'environment', id: 'prod', start: 'd' })).plugins).toEqual({
      'example-v5-check': 'example-v5',
    });
    // node-1 has the pending role controller: its chain is planned too.
    expect(await envIds({ start: 'b', end: 'c' })).toEqual(['b', 'c']);
    // The release's graph is now the chains only: storage is no role of prod any more.
    expect(
      await refusal(client.request('node.assign', { uid: 'node-1', environment: 'prod', roles: ['storage'] })),
    ).toMatchObject({
      code: 'INVALID_INPUT',
      message:
        "roles: role 'storage' is not defined by the release or the plugins of environment 'prod'; it defines compute, controller, monitoring-agent",
    });
    await client.request('node.assign', { uid: 'node-1', environment: 'prod', roles: ['monitoring-agent'] });
    expect(await refusal(client.request('tasks.get', { scope: 'environment', id: 'prod', start: 'a' }))).toMatchObject({
      message: "start: the task runs on none of the planned nodes ('a')",
    });
    const overrides = [
      {
        id: 'f',
        type: 'shell',
        version: '2.0.0',
        roles: ['compute'],
        requires: ['e'],
        required_for: ['deploy_end'],
        parameters: { cmd: 'true' },
      },
    ];
    await client.request('tasks.put', { scope: 'environment', id: 'prod', tasks: overrides });
    expect(await envIds({ start: 'e' })).toEqual(['e', 'f']);
    expect((await client.request('env.get', { id: 'prod' })).task_overrides).toBe(1);
    const graph = await client.request('tasks.get', { scope: 'environment', id: 'prod', graph: 'provisioning' });
    expect(graph.tasks.map((t) => t.id)).toEqual(['provision-prepare']);
    const unknown = await refusal(client.request('tasks.get', { scope: 'environment', id: 'prod', graph: 'nope' }));
    expect(unknown.message).toBe("type: graph 'nope' does not exist; the environment has: default, provisioning");
  });

  it('deployment_tasks - a PUT with bad tasks is refused with every problem and changes nothing', async () => {
    const bad = [
      { id: 'x', type: 'shell', parameters: {} },
      { id: 'y', type: 'teleport' },
      { id: 'z', type: 'shell', requires: ['missing'], parameters: { cmd: 'true' } },
    ];
    const r = await refusal(client.request('tasks.put', { scope: 'release', id: '1', tasks: bad.slice(0, 2) }));
    expect(r.message.split('\n')).toEqual([
      "releases/1/default: [0].parameters.cmd: task 'x': a shell task needs parameters.cmd",
      `releases/1/default: [1].type: task 'y': unknown task type "teleport": expected one of stage, group, skipped, puppet, shell, upload_file, sync, copy_files, reboot (rsync = sync)`,
    ]);
    const missing = await refusal(client.request('tasks.put', { scope: 'release', id: '1', tasks: [bad[2]] }));
    expect(missing.message).toContain("requires names task 'missing', which does not exist");
    expect((await client.request('tasks.get', { scope: 'release', id: '1' })).tasks.map((t) => t.id)).toEqual([
      'a',
      'b',
      'c',
      'd',
      'e',
    ]);
  });

  it('strategies - upload validates with parseStrategyDocument, stores the text, refuses duplicates without --replace', async () => {
    const { readFile } = await import('node:fs/promises');
    const document = await readFile(STRATEGY_FILE, 'utf8');
    const s = await client.request('strategy.upload', { document, file: 'deployment-strategy.yaml' });
    expect([s.name, s.groups.length > 0, s.document === document]).toEqual(['deployment-strategy', true, true]);
    expect(await refusal(client.request('strategy.upload', { document }))).toEqual({
      code: 'CONFIG_ALREADY_EXISTS',
      message: "strategy 'deployment-strategy' already exists; upload with --replace to replace it",
    });
    const bad = await refusal(
      client.request('strategy.upload', {
        name: 'bad',
        document: 'groups:\n  - name: g\n    success_criteria: {percent_successful_nodes: 140}\n',
      }),
    );
    expect(bad.code).toBe('INVALID_INPUT');
    expect(bad.message).toContain('percent_successful_nodes');
    expect((await client.request('strategy.list', {})).map((x) => x.name)).toEqual(['deployment-strategy']);
    expect((await client.request('strategy.remove', { name: 'deployment-strategy' })).name).toBe('deployment-strategy');
    expect(await client.request('strategy.list', {})).toEqual([]);
  });

  it('plugins - disable, then remove; the release can be removed once no environment uses it', async () => {
    await client.request('env.plugin.disable', { environment: 'prod', plugin: 'example-v5' });
    expect((await client.request('plugin.remove', { id: 'example-v5' })).name).toBe('example-v5');
    expect(await client.request('plugin.list', {})).toEqual([]);
  });
});

describe('basic release pre-install (seed 003)', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase('config_store_pre', { migrations: ALL_MIGRATIONS, entities: CONFIG_STORE_ENTITIES });
  });

  afterAll(async () => {
    await db?.drop();
  });

  it('installs the basic release once; after it is removed, a restart does not bring it back', async () => {
    const { CatalogService } = await import('./services/catalog.service');
    const catalog = new CatalogService(db.dataSource);
    expect(await catalog.preinstallRelease(() => openPluginSource(RELEASE_DIR), RELEASE_DIR)).toBe(
      `basic release: installed example-release 1.0.0 (id 1) from ${RELEASE_DIR}`,
    );
    await catalog.removeRelease('example-release');
    expect(await catalog.preinstallRelease(() => openPluginSource(RELEASE_DIR), RELEASE_DIR)).toBe(
      'basic release: pre-installed earlier',
    );
    expect(await catalog.listReleases()).toEqual([]);
  });
});
