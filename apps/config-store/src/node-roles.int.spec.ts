import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { connectTestNats } from '@granule/messaging';
import type { NatsConnection } from '@nats-io/transport-node';
import { InvalidInputError } from '@granule/core';
import { ConfigStoreClient, readPluginSourceFiles } from '@granule/config-store-client';
import type { TestDatabase } from '@granule/event-store';
import type { ConfigStoreRuntime } from './config-store.runtime';
import { NodeEntity } from './persistence/config-store.entities';
import { startTestConfigStore } from './testing/test-config-store';

const root = path.resolve(__dirname, '../../..');
const RELEASE_DIR = path.join(root, 'examples/releases/example-release');
const PLUGIN_DIR = path.join(root, 'examples/plugins/example-v5');
const TOKEN = 'node-roles-test-token-0123456789';

// The release defines controller, compute and storage; the plugin monitoring-agent; an override
// of the environment adds a regex role. A node may be assigned only those.
describe('node assign - refuses a role the environment does not define (real PostgreSQL and NATS, HTTP)', () => {
  let db: TestDatabase;
  let runtime: ConfigStoreRuntime;
  let nc: NatsConnection;
  let client: ConfigStoreClient;
  let base: string;
  const prefix = `test.${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    ({ db, runtime, base } = await startTestConfigStore('config_roles', { prefix, http: { token: TOKEN } }));
    nc = await connectTestNats('node-roles-test');
    client = new ConfigStoreClient(nc, { prefix });
    await client.request('release.install', await readPluginSourceFiles(RELEASE_DIR));
    await client.request('plugin.install', await readPluginSourceFiles(PLUGIN_DIR));
    await client.request('env.create', { name: 'prod' });
    await client.request('env.create', { name: 'mon', plugins: ['example-v5'] });
    await client.request('node.add', { uid: 'n1', hostname: 'h1' });
  }, 30_000);

  afterAll(async () => {
    await nc?.drain();
    await runtime?.stop();
    await db?.drop();
  });

  const pending = async (uid: string): Promise<[number | null, string[]]> => {
    const n = await db.dataSource.getRepository(NodeEntity).findOneByOrFail({ uid });
    return [n.environmentId, n.pendingRoles];
  };

  it('NATS - a typo is refused with CONFIG_UNKNOWN_ROLE naming the role, the environment and its roles', async () => {
    const err = await client
      .request('node.assign', { uid: 'n1', environment: 'prod', roles: ['controller', 'controler'] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(InvalidInputError);
    const refused = err as InvalidInputError;
    expect(refused.diagnostics.map((d) => d.code)).toEqual(['CONFIG_UNKNOWN_ROLE']);
    expect(refused.message).toBe(
      "roles: role 'controler' is not defined by the release or the plugins of environment 'prod'; it defines compute, controller, storage",
    );
    expect(await pending('n1')).toEqual([null, []]);
  });

  it("NATS - an enabled plugin's role is defined in its environment only", async () => {
    const refused = await client
      .request('node.assign', { uid: 'n1', environment: 'prod', roles: ['monitoring-agent'] })
      .catch((e: InvalidInputError) => e);
    expect((refused as InvalidInputError).message).toContain("role 'monitoring-agent' is not defined");
    const assigned = await client.request('node.assign', {
      uid: 'n1',
      environment: 'mon',
      roles: ['controller', 'monitoring-agent'],
    });
    expect(assigned.pending_roles).toEqual(['controller', 'monitoring-agent']);
  });

  it("NATS - a role an environment override's regex matches is defined", async () => {
    await client.request('tasks.put', {
      scope: 'environment',
      id: 'prod',
      tasks: [
        {
          id: 'edge-setup',
          type: 'shell',
          version: '2.0.0',
          roles: ['/^edge-[0-9]+$/'],
          requires: ['deploy_start'],
          required_for: ['deploy_end'],
          parameters: { cmd: 'true' },
        },
      ],
    });
    const assigned = await client.request('node.assign', { uid: 'n1', environment: 'prod', roles: ['edge-7'] });
    expect(assigned.pending_roles).toEqual(['edge-7']);
    const refused = await client
      .request('node.assign', { uid: 'n1', environment: 'prod', roles: ['edge-x'] })
      .catch((e: InvalidInputError) => e);
    expect((refused as InvalidInputError).message).toBe(
      "roles: role 'edge-x' is not defined by the release or the plugins of environment 'prod'; it defines compute, controller, storage, /^edge-[0-9]+$/",
    );
    expect(await pending('n1')).toEqual([1, ['edge-7']]);
  });

  it('NATS - node add with roles in an environment is held to the same rule, and adds nothing when refused', async () => {
    const refused = await client
      .request('node.add', { uid: 'n2', hostname: 'h2', environment: 'prod', roles: ['compute', 'comptue'] })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidInputError);
    expect((refused as InvalidInputError).message).toBe(
      "roles: role 'comptue' is not defined by the release or the plugins of environment 'prod'; it defines compute, controller, storage, /^edge-[0-9]+$/",
    );
    expect(await db.dataSource.getRepository(NodeEntity).findOneBy({ uid: 'n2' })).toBeNull();
    const added = await client.request('node.add', {
      uid: 'n2',
      hostname: 'h2',
      environment: 'prod',
      roles: ['compute'],
    });
    expect(added.roles).toEqual(['compute']);
  });

  it('HTTP - PUT /nodes/:uid/assignment answers 400 with the same code and message', async () => {
    const res = await fetch(`${base}/nodes/n1/assignment`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ environment: 'prod', roles: ['stroage'] }),
    });
    const body = (await res.json()) as {
      error: { code: string; message: string; diagnostics?: { code: string; path?: string }[] };
    };
    expect([res.status, body.error.code, body.error.diagnostics?.map((d) => [d.code, d.path])]).toEqual([
      400,
      'INVALID_INPUT',
      [['CONFIG_UNKNOWN_ROLE', 'roles']],
    ]);
    expect(body.error.message).toBe(
      "roles: role 'stroage' is not defined by the release or the plugins of environment 'prod'; it defines compute, controller, storage, /^edge-[0-9]+$/",
    );
    expect(await pending('n1')).toEqual([1, ['edge-7']]);
  });
});
