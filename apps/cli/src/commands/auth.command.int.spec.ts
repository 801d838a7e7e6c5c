import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { connect, credsAuthenticator } from '@nats-io/transport-node';
import { startPrivateNats, type PrivateServer } from '@granule/messaging';
import { buildProgram } from '../program';

let dir: string;
let server: PrivateServer;

/** Runs `granule ARGS` in process and returns what it printed on stdout and stderr. */
async function granuleOut(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  const printed = { stdout: '', stderr: '' };
  const capture = (stream: 'stdout' | 'stderr') =>
    jest.spyOn(process[stream], 'write').mockImplementation((chunk: string | Uint8Array) => {
      printed[stream] += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
      return true;
    });
  const out = capture('stdout');
  const err = capture('stderr');
  try {
    await buildProgram(args[0]).parseAsync(['node', 'granule', ...args]);
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  return printed;
}

/** Runs `granule ARGS` in process and returns what it printed on stdout. */
async function granule(...args: string[]): Promise<string> {
  return (await granuleOut(...args)).stdout;
}

/** This test's NATS, where no config-store answers: the agent commands' recording is refused by silence. */
const bus = (): string[] => ['--nats-url', server.url, '--subject-prefix', 'clitest'];

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
    expect(await granule('agent', 'enroll', 'node-9', '--out', creds, ...auth, ...bus())).toMatch(
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
      printed = await granule('agent', 'revoke', 'node-9', ...auth, ...bus(), '--nats-pid', String(server.pid));
    });
    expect(printed).toMatch(/^revoked 1 credential\(s\) of node node-9\nnats-server \(pid \d+\) is reloading/);
    await expect(connectWith(creds)).rejects.toThrow(/Authorization Violation/);
    const after = JSON.parse(await granule('auth', 'list', ...auth, '-o', 'json')) as {
      name: string;
      status: string;
    }[];
    expect(after.find((i) => i.name === 'agent-node-9')?.status).toBe('revoked');
  });

  it('enroll without a config-store - the credential is issued, and one line says node list will not show it and how to record it', async () => {
    const authDir = path.join(dir, 'auth');
    const { stdout, stderr } = await granuleOut('agent', 'enroll', 'node-5', '--auth-dir', authDir, ...bus());
    // --out -: stdout is the .creds file and nothing else, so it can be redirected to one.
    expect(stdout).toMatch(/^-----BEGIN NATS USER JWT-----\n[\s\S]*------END USER NKEY SEED------\n[\s\S]*$/);
    expect(stdout).not.toMatch(/config-store|warning/);
    expect(stderr).toMatch(
      new RegExp(
        `^warning: not recorded in the config-store \\(.*config-store.*\\): granule node list will not show it until you run granule agent record node-5 --auth-dir ${authDir}\n$`,
      ),
    );
    const listed = JSON.parse(await granule('auth', 'list', '--auth-dir', authDir, '-o', 'json')) as {
      node: string;
      status: string;
    }[];
    expect(listed.filter((i) => i.node === 'node-5').map((i) => i.status)).toEqual(['active']);
    // --no-record: the trust store only, no attempt and no warning.
    const quiet = await granuleOut('agent', 'enroll', 'node-6', '--auth-dir', authDir, '--no-record', ...bus());
    expect(quiet.stdout).toMatch(/^-----BEGIN NATS USER JWT-----/);
    expect(quiet.stderr).toBe('');
    // Recording later is the command's whole purpose: without a config-store it fails, naming why.
    await expect(granule('agent', 'record', 'node-5', '--auth-dir', authDir, ...bus())).rejects.toThrow(/config-store/);
    await expect(granule('agent', 'record', 'node-77', '--auth-dir', authDir, ...bus())).rejects.toThrow(
      `no agent credential was issued to node 'node-77' in ${authDir}`,
    );
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
