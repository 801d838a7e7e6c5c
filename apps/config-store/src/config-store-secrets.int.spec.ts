import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { connectTestNats, testServicesEnv } from '@granule/messaging';
import type { NatsConnection } from '@nats-io/transport-node';
import { InvalidInputError } from '@granule/core';
import { ConfigStoreClient, readPluginSourceFiles } from '@granule/config-store-client';
import { createTestDatabase, type TestDatabase } from '@granule/event-store';
import { SecretOpener, generateSecretsKeyPair } from '@granule/secrets';
import { isSealedValue, type SealedValue } from '@granule/task-model';
import { loadConfigStoreConfig } from './config/config.service';
import { startConfigStore, type ConfigStoreRuntime } from './config-store.runtime';
import { ALL_MIGRATIONS } from './migrations';
import { CONFIG_STORE_ENTITIES } from './persistence/config-store.entities';

const root = path.resolve(__dirname, '../../..');
const RELEASE_DIR = path.join(root, 'examples/releases/example-release');
const PLUGIN_DIR = path.join(root, 'examples/plugins/example-v5');

// Values no other data contains: finding one anywhere in a table is a leak.
const DB_PASSWORD = `db-pw-${randomBytes(6).toString('hex')}`;
const API_TOKEN = `api-tok-${randomBytes(6).toString('hex')}`;
const ADMIN_PASSWORD = `admin-pw-${randomBytes(6).toString('hex')}`;
const VAULT_TOKEN = `vault-${randomBytes(6).toString('hex')}`;
const PLUGIN_SECRET = `plugin-pw-${randomBytes(6).toString('hex')}`;

const SECRET_TASKS = [
  {
    id: 'db-setup',
    type: 'shell',
    version: '2.0.0',
    roles: ['controller'],
    requires: ['deploy_start'],
    required_for: ['deploy_end'],
    sensitive: ['API_URL_WITH_TOKEN'],
    parameters: {
      cmd: './db.sh',
      env: { DB_PASSWORD, API_URL_WITH_TOKEN: `https://x/?t=${API_TOKEN}`, DB_HOST: 'db1' },
    },
  },
];

/** Every row of the config tables as text: what an attacker with the database would read. */
async function tablesText(db: TestDatabase): Promise<string> {
  const tables = ['config_releases', 'config_plugins', 'config_environments'];
  const rows = await Promise.all(tables.map((t) => db.dataSource.query(`SELECT * FROM ${t}`)));
  return JSON.stringify(rows);
}

async function startStore(db: TestDatabase, prefix: string, publicKey?: string): Promise<ConfigStoreRuntime> {
  const config = loadConfigStoreConfig({
    ...testServicesEnv(),
    GRANULE_DATABASE_URL: db.url,
    GRANULE_SUBJECT_PREFIX: prefix,
    GRANULE_PREINSTALLED_RELEASE: '',
    ...(publicKey ? { GRANULE_SECRETS_PUBLIC_KEY: publicKey } : {}),
  });
  return startConfigStore(config, () => undefined, { logger: false });
}

describe('config-store seals secrets before it stores them (real PostgreSQL and NATS)', () => {
  const pair = generateSecretsKeyPair();
  const opener = new SecretOpener(pair.secretKey);
  const prefix = `test.${randomBytes(4).toString('hex')}`;
  let db: TestDatabase;
  let runtime: ConfigStoreRuntime;
  let nc: NatsConnection;
  let client: ConfigStoreClient;

  beforeAll(async () => {
    db = await createTestDatabase('config_store_secrets', {
      migrations: ALL_MIGRATIONS,
      entities: CONFIG_STORE_ENTITIES,
    });
    runtime = await startStore(db, prefix, pair.publicKey);
    nc = await connectTestNats('config-store-secrets-test');
    client = new ConfigStoreClient(nc, { prefix });
    await client.request('release.install', await readPluginSourceFiles(RELEASE_DIR));
  });

  afterAll(async () => {
    await nc?.drain();
    await runtime?.stop();
    await db?.drop();
  });

  it('ping - tells clients the public key to seal with', async () => {
    expect(await client.request('ping', {})).toEqual({
      service: 'config-store',
      subject_prefix: prefix,
      secrets_public_key: pair.publicKey,
    });
  });

  it('tasks.put - task parameters are stored and answered sealed, and open to what was sent', async () => {
    const put = await client.request('tasks.put', { scope: 'release', id: '1', graph: 'default', tasks: SECRET_TASKS });
    const env = (put.tasks[0].parameters as { env: Record<string, unknown> }).env;
    expect(env.DB_HOST).toBe('db1');
    expect([isSealedValue(env.DB_PASSWORD), isSealedValue(env.API_URL_WITH_TOKEN)]).toEqual([true, true]);
    expect(opener.open(env.DB_PASSWORD as SealedValue)).toBe(DB_PASSWORD);
    expect(opener.open(env.API_URL_WITH_TOKEN as SealedValue)).toBe(`https://x/?t=${API_TOKEN}`);
    const got = await client.request('tasks.get', { scope: 'release', id: '1' });
    expect(got.tasks[0]).toMatchObject({ sensitive: ['API_URL_WITH_TOKEN'], parameters: { env: { DB_HOST: 'db1' } } });
    expect(JSON.stringify(got)).not.toMatch(new RegExp(`${DB_PASSWORD}|${API_TOKEN}`));
    const stored = await tablesText(db);
    expect(stored).toContain('$sealed');
    expect(stored).not.toMatch(new RegExp(`${DB_PASSWORD}|${API_TOKEN}`));
  });

  it('environments - settings secrets are sealed on create and on patch; a sealed value sent again stays as it is', async () => {
    const created = await client.request('env.create', {
      name: 'prod',
      settings: { access: { password: { value: ADMIN_PASSWORD, type: 'password' }, user: { value: 'admin' } } },
    });
    const access = created.settings.access as Record<string, { value: unknown }>;
    expect(access.user.value).toBe('admin');
    expect(opener.open(access.password.value as SealedValue)).toBe(ADMIN_PASSWORD);
    const updated = await client.request('env.update', {
      id: 'prod',
      settings_patch: { 'vault.token': VAULT_TOKEN, 'storage.ceph.value': true },
    });
    const vault = updated.settings.vault as { token: SealedValue };
    expect(opener.open(vault.token)).toBe(VAULT_TOKEN);
    expect((updated.settings.access as Record<string, { value: unknown }>).password.value).toEqual(
      access.password.value,
    );
    expect(await tablesText(db)).not.toMatch(new RegExp(`${ADMIN_PASSWORD}|${VAULT_TOKEN}`));
  });

  it('plugin install - a plugin whose task has a secret env variable is stored sealed', async () => {
    const source = await readPluginSourceFiles(PLUGIN_DIR);
    source.files['deployment_tasks.yaml'] = source.files['deployment_tasks.yaml'].replace(
      'cmd: bash ./install-agent.sh',
      `cmd: bash ./install-agent.sh\n    env: {AGENT_TOKEN: ${PLUGIN_SECRET}}`,
    );
    const installed = await client.request('plugin.install', source);
    expect(installed.plugin?.name).toBe('example-v5');
    const stored = await tablesText(db);
    expect(stored).not.toContain(PLUGIN_SECRET);
    const [row]: {
      releases: { graphs: Record<string, Array<{ id: string; parameters: Record<string, unknown> }>> }[];
    }[] = await db.dataSource.query(`SELECT releases FROM config_plugins WHERE name = 'example-v5'`);
    const task = row.releases[0].graphs.default.find((t) => t.id === 'example-v5-agent-install');
    expect(opener.open((task?.parameters.env as { AGENT_TOKEN: SealedValue }).AGENT_TOKEN)).toBe(PLUGIN_SECRET);
  });
});

describe('config-store without GRANULE_SECRETS_PUBLIC_KEY', () => {
  const prefix = `test.${randomBytes(4).toString('hex')}`;
  let db: TestDatabase;
  let runtime: ConfigStoreRuntime;
  let nc: NatsConnection;
  let client: ConfigStoreClient;

  beforeAll(async () => {
    db = await createTestDatabase('config_store_nokey', {
      migrations: ALL_MIGRATIONS,
      entities: CONFIG_STORE_ENTITIES,
    });
    runtime = await startStore(db, prefix);
    nc = await connectTestNats('config-store-secrets-test');
    client = new ConfigStoreClient(nc, { prefix });
    await client.request('release.install', await readPluginSourceFiles(RELEASE_DIR));
  });

  afterAll(async () => {
    await nc?.drain();
    await runtime?.stop();
    await db?.drop();
  });

  const refused = async (p: Promise<unknown>): Promise<unknown[]> => {
    try {
      await p;
    } catch (err) {
      if (err instanceof InvalidInputError) return err.diagnostics;
      throw err;
    }
    throw new Error('expected a refusal');
  };

  it('ping has no key to give; the example release, which has no secret, installs as before', async () => {
    expect(await client.request('ping', {})).toEqual({ service: 'config-store', subject_prefix: prefix });
    expect((await client.request('release.list', {})).map((r) => r.name)).toEqual(['example-release']);
  });

  it('a secret in clear is refused, each named with its task, and nothing is stored', async () => {
    const hint =
      "a secret in clear: config-store seals secrets before it stores them and has no GRANULE_SECRETS_PUBLIC_KEY: start it with the installation's public key (granule secrets keygen prints a pair), or leave the value out";
    expect(
      await refused(client.request('tasks.put', { scope: 'release', id: '1', graph: 'default', tasks: SECRET_TASKS })),
    ).toEqual([
      {
        severity: 'error',
        code: 'SECRET_NOT_SEALED',
        file: 'releases/1/default',
        path: '[0].parameters.env.DB_PASSWORD',
        taskId: 'db-setup',
        message: hint,
      },
      {
        severity: 'error',
        code: 'SECRET_NOT_SEALED',
        file: 'releases/1/default',
        path: '[0].parameters.env.API_URL_WITH_TOKEN',
        taskId: 'db-setup',
        message: hint,
      },
    ]);
    expect(
      await refused(client.request('env.create', { name: 'prod', settings: { db: { password: ADMIN_PASSWORD } } })),
    ).toEqual([{ severity: 'error', code: 'SECRET_NOT_SEALED', path: 'settings.db.password', message: hint }]);
    expect(await client.request('env.list', {})).toEqual([]);
    expect(await tablesText(db)).not.toMatch(new RegExp(`${DB_PASSWORD}|${API_TOKEN}|${ADMIN_PASSWORD}`));
  });

  it('an already sealed value is stored as it is: the key is needed only to seal', async () => {
    const sealed = { $sealed: 'XAAA.sealed-elsewhere' };
    const env = await client.request('env.create', { name: 'staging', settings: { db: { password: sealed } } });
    expect(env.settings).toEqual({ db: { password: sealed } });
  });
});
