import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { connectNats } from '@granule/messaging';
import { readCredentials } from '@granule/nats-auth';
import { ROOT, readText } from './packaging-files';

// docker-compose.yml's auth-init and NATS without Docker: deploy/docker/auth-init.sh runs with
// the built CLI (as the image's `granule`) into folders that stand for its volumes, then the
// machine's nats-server runs with the compose service's own command and configuration file, the
// container paths swapped for those folders. Authorization is on, each credential connects as
// its own identity, and a second run keeps the trust store.

interface ComposeService {
  command?: string[];
  environment?: Record<string, string>;
}
const compose = parse(readText('docker-compose.yml'), { merge: true }) as {
  services: Record<string, ComposeService>;
};
const authInit = compose.services['auth-init'];
const agentNodes = authInit.environment?.GRANULE_AGENT_NODES ?? '';
const root = process.getuid?.() === 0;
const serviceUid = root ? 1000 : (process.getuid?.() ?? 0);

let dir: string;
let nats: ChildProcess | undefined;
let url: string;

function runAuthInit(): string {
  return execFileSync('sh', [path.join(ROOT, 'deploy/docker/auth-init.sh')], {
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH,
      GRANULE_AUTH_DIR: path.join(dir, 'trust'),
      GRANULE_AUTH_OUT: path.join(dir, 'out'),
      GRANULE_CLI: `${process.execPath} ${path.join(ROOT, 'dist/apps/cli/src/main.js')}`,
      GRANULE_SUBJECT_PREFIX: authInit.environment?.GRANULE_SUBJECT_PREFIX,
      GRANULE_AGENT_NODES: agentNodes,
      GRANULE_SERVICE_UID: String(serviceUid),
    },
  });
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });

/** How a connection attempt ended: 'connected' (closed again at once) or the refusal's message. */
async function outcome(attempt: Promise<NatsConnection>): Promise<string> {
  try {
    await (await attempt).close();
    return 'connected';
  } catch (err) {
    return (err as Error).message;
  }
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'granule-compose-auth-'));
  runAuthInit();
  // The nats service's mounts: the repository's config file, the nats-auth volume, the data volume.
  mkdirSync(path.join(dir, 'etc', 'config'), { recursive: true });
  copyFileSync(path.join(ROOT, 'deploy/docker/nats-server.conf'), path.join(dir, 'etc/config/nats-server.conf'));
  symlinkSync(path.join(dir, 'out', 'nats'), path.join(dir, 'etc', 'auth'));
  const [port, monitor] = [await freePort(), await freePort()];
  const args = (compose.services.nats.command ?? []).map((a) =>
    a === '/etc/nats/config/nats-server.conf'
      ? path.join(dir, 'etc/config/nats-server.conf')
      : a === '/data'
        ? path.join(dir, 'data')
        : a === '8222'
          ? String(monitor)
          : a,
  );
  nats = spawn('nats-server', [...args, '-a', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  nats.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const deadline = Date.now() + 10_000;
  while (!output.includes('Server is ready')) {
    if (nats.exitCode !== null || Date.now() > deadline) throw new Error(`nats-server did not start: ${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  url = `nats://127.0.0.1:${port}`;
}, 30_000);

afterAll(() => {
  nats?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('docker-compose auth-init and NATS, run without Docker', () => {
  it('hands NATS its nats-auth.conf and each service and agent only its own .creds; no key leaves the trust volume', () => {
    const out = path.join(dir, 'out');
    const agents = agentNodes.split(' ').map((n) => `agent-${n}`);
    expect(readdirSync(out).sort()).toEqual(
      ['config-store', 'graph-planner', 'nats', 'orchestrator', ...agents].sort(),
    );
    expect(readdirSync(path.join(out, 'nats'))).toEqual(['nats-auth.conf']);
    for (const who of ['orchestrator', 'config-store', 'graph-planner', ...agents]) {
      expect([who, readdirSync(path.join(out, who))]).toEqual([who, ['nats.creds']]);
      const file = path.join(out, who, 'nats.creds');
      const stat = statSync(file);
      expect([who, stat.mode & 0o777, stat.uid]).toEqual([
        who,
        0o400,
        who.startsWith('agent-') ? (root ? 0 : stat.uid) : serviceUid,
      ]);
      expect([who, readCredentials(file).identity]).toEqual([who, who]);
    }
    const handedOut = execFileSync('find', [out, '-type', 'f'], { encoding: 'utf8' });
    expect(handedOut).not.toMatch(/\.nk$/m);
    expect(readdirSync(path.join(dir, 'trust'))).toEqual(expect.arrayContaining(['operator.nk', 'account-signing.nk']));
  });

  it('NATS with the compose command refuses a client without credentials', async () => {
    expect(await outcome(connect({ servers: url, reconnect: false, timeout: 3000 }))).toMatch(
      /Authorization Violation/i,
    );
  });

  it('each service and agent connects with its own credential', async () => {
    for (const who of [
      'orchestrator',
      'config-store',
      'graph-planner',
      ...agentNodes.split(' ').map((n) => `agent-${n}`),
    ]) {
      const creds = path.join(dir, 'out', who, 'nats.creds');
      const nc = await connectNats({ natsUrl: url, natsCreds: creds }, 'compose-test');
      expect([who, nc.info?.client_id !== undefined]).toEqual([who, true]);
      await nc.close();
    }
  });

  it('a second run keeps the trust store and the credentials it issued', () => {
    const snapshot = () =>
      ['trust/operator.jwt', 'trust/account-signing.nk', 'out/orchestrator/nats.creds', 'out/agent-1/nats.creds'].map(
        (f) => readFileSync(path.join(dir, f), 'utf8'),
      );
    const before = snapshot();
    runAuthInit();
    expect(snapshot()).toEqual(before);
  });
});
