import path from 'node:path';
import type { NodeView } from '@granule/contracts';
import { connectNats, NatsRefusedError, type PrivateServer } from '@granule/messaging';
import type { IssuedIdentity } from '@granule/nats-auth';
import { E2eStack } from './stack';

// Issue 20 item 3 through the built CLI and config-store on a NATS with authorization on:
// `granule agent enroll|revoke|record` record a node's credential (as the admin identity only),
// and `granule node list` shows it active, then revoked.
describe('agent credentials in granule node list (enroll, record, revoke with a config-store)', () => {
  let stack: E2eStack;
  beforeAll(async () => {
    stack = await E2eStack.start({ name: 'agentcreds', agents: [] });
    await stack.service('config-store').start();
  }, 120_000);
  afterAll(async () => stack?.stop(), 60_000);

  const authDir = (): string => path.join(stack.dir, 'auth');
  const credsOut = (): string => path.join(stack.dir, 'n7.creds');
  const cli = async (args: string[], as?: string): Promise<string> => {
    const r = await stack.granule(args, as ? { as } : {});
    stack.assertExitedOk(r, `granule ${args.join(' ')}`);
    return r.stdout;
  };
  const issued = (): IssuedIdentity => {
    const found = stack.trust?.identities().filter((i) => i.node === 'n7') ?? [];
    expect(found).toHaveLength(1);
    return found[0];
  };
  const nodeN7 = async (): Promise<NodeView> =>
    (JSON.parse(await cli(['node', 'list', '-o', 'json'])) as NodeView[]).find((n) => n.uid === 'n7') as NodeView;

  it('an operator enrolls: issued, one warning that node list will not show it; agent record as admin records it', async () => {
    const enrolled = await stack.granule(
      ['agent', 'enroll', 'n7', '--auth-dir', authDir(), '--expires', '30d', '--out', credsOut()],
      { as: 'e2e-operator' },
    );
    expect(enrolled.code).toBe(0);
    expect(enrolled.stdout).toMatch(/^agent credentials for node n7 \(expires .*\): .*n7\.creds\n$/);
    expect(enrolled.stderr).toBe(
      `warning: not recorded in the config-store (${path.join(stack.dir, 'auth', 'creds', 'e2e-operator.creds')} is not an admin credential and ${path.join(authDir(), 'creds', 'admin.creds')} does not exist: pass --creds with an admin credential): granule node list will not show it until you run granule agent record n7 --auth-dir ${authDir()}\n`,
    );
    // Enrolled before it is added: the node shows no credential yet.
    await cli(['node', 'add', 'n7', '--hostname', 'h7']);
    expect((await nodeN7()).credential).toBeNull();

    expect(await cli(['agent', 'record', 'n7', '--auth-dir', authDir()], 'e2e-admin')).toBe(
      'recorded 1 credential(s) of node n7 in the config-store\n',
    );
    const { expiresAt } = issued();
    expect((await nodeN7()).credential).toEqual({ state: 'active', expires_at: expiresAt, revoked_at: null });
    const table = await cli(['node', 'list']);
    expect(table.split('\n')[0]).toMatch(/\bSTATUS\s+CREDENTIAL$/);
    expect(table.split('\n').find((l) => l.startsWith('n7 '))).toMatch(
      new RegExp(`\\bactive \\(expires ${(expiresAt as string).slice(0, 10)}\\)$`),
    );
  });

  it('revoke as admin with --nats-pid: NATS refuses the credential, and node list shows it revoked', async () => {
    const nats = stack.natsServer as PrivateServer;
    let revoke: Awaited<ReturnType<E2eStack['granule']>> | undefined;
    await nats.reloaded(async () => {
      revoke = await stack.granule(['agent', 'revoke', 'n7', '--auth-dir', authDir(), '--nats-pid', String(nats.pid)], {
        as: 'e2e-admin',
      });
    });
    stack.assertExitedOk(revoke as NonNullable<typeof revoke>, 'granule agent revoke n7');
    expect(revoke?.stdout.split('\n')).toEqual([
      'revoked 1 credential(s) of node n7',
      'recorded in the config-store: granule node list shows the credential of node n7',
      `nats-server (pid ${nats.pid}) is reloading its configuration`,
      '',
    ]);
    await expect(connectNats({ natsUrl: stack.natsUrl, natsCreds: credsOut() }, 'revoked-agent')).rejects.toThrow(
      NatsRefusedError,
    );
    const { expiresAt, revokedAt } = issued();
    expect((await nodeN7()).credential).toEqual({ state: 'revoked', expires_at: expiresAt, revoked_at: revokedAt });
    const row = (await cli(['node', 'list'])).split('\n').find((l) => l.startsWith('n7 '));
    expect(row).toMatch(new RegExp(`\\brevoked ${(revokedAt as string).slice(0, 10)}$`));
  });
});
