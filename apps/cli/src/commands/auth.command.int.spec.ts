import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connect, credsAuthenticator } from '@nats-io/transport-node';
import { startPrivateNats, type PrivateServer } from '@granule/messaging';
import { buildProgram } from '../program';

let dir: string;
let server: PrivateServer;

/** Runs `granule ARGS` in process and returns what it printed. */
async function granule(...args: string[]): Promise<string> {
  let out = '';
  const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    return true;
  });
  try {
    await buildProgram(args[0]).parseAsync(['node', 'granule', ...args]);
  } finally {
    write.mockRestore();
  }
  return out;
}

const connectWith = (file: string) =>
  connect({ servers: server.url, authenticator: credsAuthenticator(readFileSync(file)), reconnect: false });

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'granule-auth-cli-'));
  await granule('auth', 'init', path.join(dir, 'auth'), '--prefix', 'clitest');
  server = await startPrivateNats({ include: path.join(dir, 'auth', 'nats-auth.conf') });
}, 30_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('granule auth and granule agent', () => {
  it('init writes each service its own credential, readable by its owner only, that the server accepts', async () => {
    for (const name of ['orchestrator', 'config-store', 'graph-planner', 'admin']) {
      const file = path.join(dir, 'auth', 'creds', `${name}.creds`);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      await (await connectWith(file)).close();
    }
  });

  it('enroll issues a node credential that connects; revoke --nats-pid makes the server refuse it', async () => {
    const auth = ['--auth-dir', path.join(dir, 'auth')];
    const creds = path.join(dir, 'node-9.creds');
    expect(await granule('agent', 'enroll', 'node-9', '--out', creds, ...auth)).toMatch(
      /^agent credentials for node node-9 \(expires \d{4}-.*\): .*node-9\.creds\n$/,
    );
    await (await connectWith(creds)).close();

    const listed = JSON.parse(await granule('auth', 'list', ...auth, '-o', 'json')) as {
      name: string;
      status: string;
    }[];
    expect(listed.find((i) => i.name === 'agent-node-9')?.status).toBe('active');

    let printed = '';
    await server.reloaded(async () => {
      printed = await granule('agent', 'revoke', 'node-9', ...auth, '--nats-pid', String(server.pid));
    });
    expect(printed).toMatch(/^revoked 1 credential\(s\) of node node-9\nnats-server \(pid \d+\) is reloading/);
    await expect(connectWith(creds)).rejects.toThrow(/Authorization Violation/);
    const after = JSON.parse(await granule('auth', 'list', ...auth, '-o', 'json')) as {
      name: string;
      status: string;
    }[];
    expect(after.find((i) => i.name === 'agent-node-9')?.status).toBe('revoked');
  });

  it('refuses a bad duration and an agent role given to auth issue, as usage errors', async () => {
    const auth = ['--auth-dir', path.join(dir, 'auth')];
    await expect(granule('agent', 'enroll', 'n1', '--expires', 'soon', ...auth)).rejects.toThrow(
      '--expires soon: expected a positive duration such as 90d, 12h, 30m or 3600s',
    );
    await expect(granule('auth', 'issue', 'x', '--role', 'agent', ...auth)).rejects.toThrow(
      /enroll agents with granule agent enroll/,
    );
  });
});
