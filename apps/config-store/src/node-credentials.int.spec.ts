import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { InvalidInputError } from '@granule/core';
import type { NatsRole, RecordCredentialRequest } from '@granule/contracts';
import { ConfigStoreClient } from '@granule/config-store-client';
import { createTestDatabase, pendingSchemaQueries, type TestDatabase } from '@granule/event-store';
import { connectNats, startPrivateNats, type PrivateServer } from '@granule/messaging';
import { TrustStore, type IssuedIdentity } from '@granule/nats-auth';
import { loadConfigStoreConfig } from './config/config.service';
import { startConfigStore, type ConfigStoreRuntime } from './config-store.runtime';
import { ALL_MIGRATIONS } from './migrations';
import { NodeCredentials1797000000000 } from './migrations/node-credentials.migration';
import { CONFIG_STORE_ENTITIES, NodeCredentialEntity } from './persistence/config-store.entities';
import { openConfigDatabase } from './persistence/database';
import { ConfigStoreApi } from './transport/config-store.api';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** What `granule agent enroll|revoke` sends for one credential of the trust store. */
function recordOf(i: IssuedIdentity): RecordCredentialRequest {
  return {
    uid: i.node as string,
    identity: i.name,
    public_key: i.publicKey,
    issued_at: i.issuedAt,
    ...(i.expiresAt ? { expires_at: i.expiresAt } : {}),
    ...(i.revokedAt ? { revoked_at: i.revokedAt } : {}),
  };
}

/** The refusal a promise ends with. */
async function refusal(promise: Promise<unknown>): Promise<{ code?: string; message: string; diagnostics?: unknown }> {
  try {
    await promise;
  } catch (err) {
    return err as { code?: string; message: string; diagnostics?: unknown };
  }
  throw new Error('expected a refusal, got an answer');
}

// Issue 20 item 3: node list shows each node agent's credential as the admin recorded it, on a
// NATS with authorization on (a trust store's server configuration) and a real PostgreSQL.
describe('config-store - agent credentials recorded by admins and shown on nodes', () => {
  let dir: string;
  let store: TrustStore;
  let nats: PrivateServer;
  let db: TestDatabase;
  let runtime: ConfigStoreRuntime;
  const connections: NatsConnection[] = [];
  let admin: ConfigStoreClient;
  let operator: ConfigStoreClient;
  const prefix = `creds${randomBytes(4).toString('hex')}`;

  const issue = async (name: string, role: NatsRole): Promise<string> => {
    const file = path.join(dir, `${name}.creds`);
    writeFileSync(file, (await store.issue({ name, role })).creds, { mode: 0o600 });
    return file;
  };
  const clientAs = async (creds: string): Promise<ConfigStoreClient> => {
    const nc = await connectNats({ natsUrl: nats.url, natsCreds: creds }, 'credentials-test');
    connections.push(nc);
    return new ConfigStoreClient(nc, { prefix });
  };
  const enroll = async (uid: string, ttlSeconds: number): Promise<IssuedIdentity> =>
    (await store.issue({ name: `agent-${uid}`, role: 'agent', node: uid, ttlSeconds })).identity;
  const credentialRows = () => db.dataSource.getRepository(NodeCredentialEntity).find({ order: { uid: 'ASC' } });

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'granule-node-creds-'));
    store = await TrustStore.create(path.join(dir, 'auth'), { prefix });
    const configStoreCreds = await issue('config-store', 'config-store');
    const adminCreds = await issue('alice-admin', 'admin');
    const operatorCreds = await issue('bob-operator', 'operator');
    nats = await startPrivateNats({ include: store.serverIncludePath });
    db = await createTestDatabase('config_creds', { migrations: ALL_MIGRATIONS, entities: CONFIG_STORE_ENTITIES });
    const config = loadConfigStoreConfig({
      GRANULE_DATABASE_URL: db.url,
      GRANULE_SUBJECT_PREFIX: prefix,
      GRANULE_PREINSTALLED_RELEASE: '',
      GRANULE_NATS_URL: nats.url,
      GRANULE_NATS_CREDS: configStoreCreds,
    });
    runtime = await startConfigStore(config, () => undefined, { logger: false });
    admin = await clientAs(adminCreds);
    operator = await clientAs(operatorCreds);
  }, 60_000);

  afterAll(async () => {
    for (const nc of connections) await nc.close();
    await runtime?.stop();
    await db?.drop();
    await nats?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('record - a node enrolled before it was added shows its credential active with its expiry', async () => {
    const issued = await enroll('n1', 365 * 86_400);
    expect(await admin.request('credential.record', recordOf(issued))).toEqual({
      ...recordOf(issued),
      revoked_at: null,
      state: 'active',
    });
    await admin.request('node.add', { uid: 'n1', hostname: 'h1' });
    await operator.request('node.add', { uid: 'n0', hostname: 'h0' });
    const expected = { state: 'active', expires_at: issued.expiresAt, revoked_at: null };
    expect((await operator.request('node.get', { uid: 'n1' })).credential).toEqual(expected);
    const listed = await operator.request('node.list', {});
    expect(listed.map((n) => [n.uid, n.credential])).toEqual([
      ['n0', null],
      ['n1', expected],
    ]);
  });

  it('revoke - the recorded revocation shows revoked; recording the key again without it keeps it revoked', async () => {
    const [revoked] = await store.revoke('n1');
    expect(revoked.revokedAt).toBeDefined();
    expect((await admin.request('credential.record', recordOf(revoked))).state).toBe('revoked');
    const view = { state: 'revoked', expires_at: revoked.expiresAt, revoked_at: revoked.revokedAt };
    expect((await operator.request('node.get', { uid: 'n1' })).credential).toEqual(view);
    // An enroll recorded late (its request without revoked_at) must not bring the key back.
    await admin.request('credential.record', { ...recordOf(revoked), revoked_at: undefined });
    expect((await operator.request('node.get', { uid: 'n1' })).credential).toEqual(view);
    // A node removed and added again still shows it: the record is keyed by uid, not by the node row.
    await operator.request('node.remove', { uid: 'n1' });
    expect((await operator.request('node.add', { uid: 'n1', hostname: 'h1' })).credential).toEqual(view);
  });

  it('a credential issued with a 1 s lifetime shows expired once it has lapsed', async () => {
    const issued = await enroll('n2', 1);
    await operator.request('node.add', { uid: 'n2', hostname: 'h2' });
    await admin.request('credential.record', recordOf(issued));
    const expiresAt = Date.parse(issued.expiresAt as string);
    if (Date.now() < expiresAt)
      expect((await operator.request('node.get', { uid: 'n2' })).credential?.state).toBe('active');
    await sleep(expiresAt - Date.now() + 50);
    expect((await operator.request('node.get', { uid: 'n2' })).credential).toEqual({
      state: 'expired',
      expires_at: issued.expiresAt,
      revoked_at: null,
    });
  });

  it("an operator's signed credential.record is refused FORBIDDEN: nothing recorded, nothing audited as done", async () => {
    const issued = await enroll('n3', 3600);
    const before = await credentialRows();
    const refused = await refusal(operator.request('credential.record', recordOf(issued)));
    expect(refused).toMatchObject({ code: 'FORBIDDEN' });
    expect(refused.message).toContain("'bob-operator' has the role operator; it needs admin");
    expect(await credentialRows()).toEqual(before);
    const audit = await admin.request('audit.list', {});
    const records = audit.filter((a) => a.operation === 'credential.record');
    expect(records.filter((a) => a.caller === 'bob-operator')).toEqual([]);
    // The admin's records are audited with the admin's proved name and the node as target.
    expect(records.length).toBeGreaterThan(0);
    expect(records.every((a) => a.caller === 'alice-admin' && a.role === 'admin' && a.transport === 'nats')).toBe(true);
    expect(records.map((a) => a.target)).toContain('n1');
    expect((await operator.request('node.get', { uid: 'n0' })).credential).toBeNull();
  });

  it('bad input - refused INVALID_INPUT naming the field; nothing recorded', async () => {
    const good = recordOf(await enroll('n4', 3600));
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ ...good, node: 'n4' }, 'node', "unknown field 'node'"],
      [
        { ...good, issued_at: '2026-02-30T10:00:00Z' },
        'issued_at',
        'expected an ISO 8601 time with a zone from 1970 to 9999, such as 2026-11-25T10:00:00Z (got "2026-02-30T10:00:00Z")',
      ],
      [
        { ...good, expires_at: '2026-11-25' },
        'expires_at',
        'expected an ISO 8601 time with a zone from 1970 to 9999, such as 2026-11-25T10:00:00Z (got "2026-11-25")',
      ],
      [
        { ...good, uid: 'web.1' },
        'uid',
        `expected a node uid of 1 to 63 letters, digits, '_' or '-', starting with a letter or digit, got "web.1"`,
      ],
      [
        { ...good, public_key: 'SUAKEY' },
        'public_key',
        'expected a NATS user public key (U and 55 characters A-Z, 2-7) (got "SUAKEY")',
      ],
    ];
    for (const [payload, field, message] of cases) {
      const refused = await refusal(admin.request('credential.record', payload as never));
      expect(refused).toBeInstanceOf(InvalidInputError);
      expect(refused.diagnostics).toEqual([expect.objectContaining({ path: field, message })]);
    }
    expect((await credentialRows()).map((r) => r.uid)).not.toContain('n4');
    // The first and last times taken are stored as they are; one past them is refused.
    const edges = { ...good, uid: 'n5', issued_at: '1970-01-01T01:00:00+01:00', expires_at: '9999-12-31T23:59:59Z' };
    expect(await admin.request('credential.record', edges)).toMatchObject({
      issued_at: '1970-01-01T00:00:00.000Z',
      expires_at: '9999-12-31T23:59:59.000Z',
      state: 'active',
    });
    // A key already recorded for another node is refused too.
    const other = await refusal(
      admin.request('credential.record', { ...recordOf((await store.statusOf('n2'))[0].identity), uid: 'n4' }),
    );
    expect(other).toMatchObject({ code: 'CONFIG_IN_USE' });
    expect(other.message).toMatch(/is recorded for node 'n2', not 'n4'/);
  });
});

describe('config-store - the node credentials migration', () => {
  let db: TestDatabase;

  afterAll(async () => {
    await db?.drop();
  });

  it('applies on a database at the previous schema, keeping its nodes; they show no credential', async () => {
    const previous = ALL_MIGRATIONS.filter((m) => m !== NodeCredentials1797000000000);
    db = await createTestDatabase('config_creds_mig', { migrations: previous });
    await db.dataSource.query(
      `INSERT INTO config_nodes (uid, hostname, roles, pending_roles, tags, labels) VALUES ('old-1', 'h', '{}', '{}', '{}', '{}')`,
    );
    await db.dataSource.destroy();
    const ran: string[] = [];
    const ds = await openConfigDatabase(db.url, {
      create: false,
      runMigrations: true,
      onMigrated: (n) => ran.push(...n),
    });
    try {
      expect(ran).toEqual(['NodeCredentials1797000000000']);
      expect(await pendingSchemaQueries(ds)).toEqual([]);
      const api = new ConfigStoreApi(ds, 'unused');
      expect(await api.handle('node.list', {})).toEqual([expect.objectContaining({ uid: 'old-1', credential: null })]);
    } finally {
      await ds.destroy();
    }
  });
});
