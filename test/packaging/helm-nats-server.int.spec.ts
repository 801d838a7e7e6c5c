import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { TrustStore } from '@granule/nats-auth';
import { connectNats } from '@granule/messaging';
import { helmBinary, runHelm } from './packaging-files';

// The chart's own NATS configuration (helm template), run by the machine's nats-server with a
// trust store from `granule auth init`'s library: authorization is on (a client without
// credentials is refused, a service's .creds works and reaches JetStream), and with server TLS
// the services' GRANULE_NATS_TLS_* files are what it takes. Only the container's absolute paths
// and ports are swapped for the test's own.

const helm = helmBinary();
let dir: string;
let store: TrustStore;
const servers: ChildProcess[] = [];

function natsConf(...args: string[]): string {
  const r = runHelm(helm, ['template', 'granule', 'helm/granule', '--set', 'nats.server.enabled=true', ...args]);
  if (r.status !== 0) throw new Error(r.stderr);
  const configMap = parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as { kind: string; metadata: { name: string }; data?: Record<string, string> })
    .find((o) => o?.kind === 'ConfigMap' && o.metadata.name === 'granule-nats');
  return configMap?.data?.['nats.conf'] ?? '';
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });

/** Lays the config out as the pod does (config/nats.conf beside auth/nats-auth.conf) and starts nats-server. */
async function startServer(conf: string, name: string): Promise<string> {
  const root = path.join(dir, name);
  mkdirSync(path.join(root, 'config'), { recursive: true });
  mkdirSync(path.join(root, 'auth'), { recursive: true });
  const [port, monitor] = [await freePort(), await freePort()];
  writeFileSync(path.join(root, 'auth', 'nats-auth.conf'), store.serverInclude());
  writeFileSync(
    path.join(root, 'config', 'nats.conf'),
    `host: 127.0.0.1\n${conf}`
      .replace(/^port: \d+$/m, `port: ${port}`)
      .replace(/^http_port: \d+$/m, `http_port: ${monitor}`)
      .replaceAll('/var/run/nats/', `${root}/`)
      .replaceAll('store_dir: /data', `store_dir: ${root}/js`)
      .replaceAll('/etc/nats/tls/', `${dir}/tls/`),
  );
  const child = spawn('nats-server', ['-c', path.join(root, 'config', 'nats.conf')], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, POD_NAME: `${name}-0` },
  });
  servers.push(child);
  let output = '';
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const deadline = Date.now() + 10_000;
  while (!output.includes('Server is ready')) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`nats-server did not start: ${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return `127.0.0.1:${port}`;
}

/** How a connection attempt ended: 'connected' (closed again at once) or the refusal's message. */
async function outcome(attempt: Promise<NatsConnection>): Promise<string> {
  try {
    await (await attempt).close();
    return 'connected';
  } catch (err) {
    return (err as Error).message;
  }
}

async function issue(name: 'orchestrator' | 'config-store'): Promise<string> {
  const file = path.join(dir, `${name}.creds`);
  writeFileSync(file, (await store.issue({ name, role: name })).creds, { mode: 0o600 });
  return file;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'granule-helm-nats-'));
  store = await TrustStore.create(path.join(dir, 'store'), { prefix: 'granule' });
});

afterAll(() => {
  for (const s of servers) s.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe("helm/granule's NATS server configuration on a real nats-server", () => {
  it('refuses a client without credentials and lets a service in with its .creds, JetStream on', async () => {
    const hostPort = await startServer(natsConf(), 'plain');
    expect(await outcome(connect({ servers: hostPort, reconnect: false, timeout: 3000 }))).toMatch(
      /Authorization Violation/i,
    );
    const nc = await connectNats({ natsUrl: `nats://${hostPort}`, natsCreds: await issue('orchestrator') }, 'test');
    try {
      const info = await (await jetstreamManager(nc)).getAccountInfo();
      expect(info.limits.max_storage).toBe(-1);
    } finally {
      await nc.close();
    }
  });

  it('with server TLS and verifyClients: the services connect with the CA, certificate and key the chart mounts', async () => {
    const tls = path.join(dir, 'tls');
    mkdirSync(tls);
    const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: tls, stdio: 'pipe' });
    ssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=test-ca',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
    );
    writeFileSync(path.join(tls, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
    for (const [name, cn] of [
      ['tls', 'granule-nats'],
      ['client', 'config-store'],
    ]) {
      ssl(
        'req',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-subj',
        `/CN=${cn}`,
        '-keyout',
        `${name}.key`,
        '-out',
        `${name}.csr`,
      );
      ssl(
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-days',
        '1',
        '-extfile',
        'san.ext',
        '-out',
        `${name}.crt`,
      );
    }
    const conf = natsConf(
      '--set',
      'nats.server.tls.secretName=nats-tls',
      '--set',
      'nats.server.tls.verifyClients=true',
    );
    expect(conf).toContain('verify: true');
    const hostPort = await startServer(conf, 'tls');
    const url = `tls://${hostPort}`;
    const creds = await issue('config-store');
    // A client without a certificate is turned away at the TLS handshake, even with credentials.
    expect(
      await outcome(
        connectNats({ natsUrl: url, natsCreds: creds, natsTlsCa: path.join(tls, 'ca.crt') }, 'test', {
          timeoutMs: 3000,
        }),
      ),
    ).not.toBe('connected');
    const nc = await connectNats(
      {
        natsUrl: url,
        natsCreds: creds,
        natsTlsCa: path.join(tls, 'ca.crt'),
        natsTlsCert: path.join(tls, 'client.crt'),
        natsTlsKey: path.join(tls, 'client.key'),
      },
      'test',
    );
    expect(nc.info?.tls_required).toBe(true);
    await nc.close();
    // And a certificate is no way around authorization.
    expect(
      await outcome(
        connectNats(
          {
            natsUrl: url,
            natsTlsCa: path.join(tls, 'ca.crt'),
            natsTlsCert: path.join(tls, 'client.crt'),
            natsTlsKey: path.join(tls, 'client.key'),
          },
          'test',
          { timeoutMs: 3000 },
        ),
      ),
    ).toMatch(/NATS requires credentials/);
  }, 30_000);
});
