import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * A Redis or NATS server of a test's own (the machine's `redis-server` / `nats-server`, on a
 * port of its own), for tests that restart the server under a running system. `restart` stops
 * it (SIGTERM: NATS flushes its JetStream store first) and starts it again on the same port and
 * store; `stop` removes everything it made.
 */
export interface PrivateServer {
  readonly url: string;
  readonly port: number;
  /** False between `halt()` and `resume()`. */
  readonly running: boolean;
  /** The server process's id while it runs. */
  readonly pid: number | undefined;
  /** Stops the server and waits until it is gone (SIGKILL after 5 s). */
  halt(): Promise<void>;
  /** Starts it again after `halt()`, on the same port and store. */
  resume(): Promise<void>;
  /** `halt()`, `pauseMs` of outage, `resume()`. */
  restart(pauseMs?: number): Promise<void>;
  /** Stops it for good and deletes its store. */
  stop(): Promise<void>;
  /** Asks the server to read its configuration again (SIGHUP) and waits until it has. */
  reload(): Promise<void>;
  /** Runs `signal`, something that makes the server reload (another process's SIGHUP), and waits until it has. */
  reloaded(signal: () => unknown): Promise<void>;
}

export interface PrivateNatsOptions {
  /**
   * A configuration file the server includes besides its own port and store: for example a
   * trust store's nats-auth.conf, which turns authorization on. `reload()` reads it again.
   */
  include?: string;
  /** Lines of server configuration (e.g. `max_payload: 65536`). */
  settings?: string[];
  /**
   * The address it listens on (default 127.0.0.1): another of this machine's addresses, such as
   * the bridge of the multi-host tier's network namespaces (test/fleet), for clients that cannot
   * reach the loopback.
   */
  host?: string;
}

/**
 * A Redis of its own: no persistence, as the machine's (a restart loses every key). With
 * `password`, every client must authenticate (`url` carries it).
 */
export function startPrivateRedis(options: { password?: string } = {}): Promise<PrivateServer> {
  const auth = options.password ? ['--requirepass', options.password] : [];
  return startPrivate(
    'redis-server',
    (port) => ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...auth],
    (port) =>
      options.password
        ? `redis://:${encodeURIComponent(options.password)}@127.0.0.1:${port}`
        : `redis://127.0.0.1:${port}`,
  );
}

/** A NATS server with JetStream of its own, its store in a temporary directory kept across restarts. */
export function startPrivateNats(options: PrivateNatsOptions = {}): Promise<PrivateServer> {
  const store = mkdtempSync(path.join(os.tmpdir(), 'granule-private-nats-'));
  const host = options.host ?? '127.0.0.1';
  return startPrivate(
    'nats-server',
    (port) => {
      if (options.include === undefined && options.settings === undefined)
        return ['-a', host, '-p', String(port), '-js', '-sd', store];
      const file = path.join(store, 'server.conf');
      writeFileSync(
        file,
        [
          `host: ${host}`,
          `port: ${port}`,
          `jetstream { store_dir: ${JSON.stringify(path.join(store, 'js'))} }`,
          ...(options.settings ?? []),
          // nats-server resolves an include against the including file's folder.
          ...(options.include ? [`include ${JSON.stringify(path.relative(store, options.include))}`] : []),
          '',
        ].join('\n'),
      );
      return ['-c', file];
    },
    (port) => `nats://${host}:${port}`,
    store,
    host,
  );
}

async function startPrivate(
  command: string,
  args: (port: number) => string[],
  url: (port: number) => string,
  store?: string,
  host = '127.0.0.1',
): Promise<PrivateServer> {
  const port = await freePort(host);
  let child: ChildProcess | undefined;
  let output = '';
  const launch = async (): Promise<void> => {
    output = '';
    const c = spawn(command, args(port), { stdio: ['ignore', 'pipe', 'pipe'] });
    child = c;
    c.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    c.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const deadline = Date.now() + 15_000;
    while (!(await accepts(host, port))) {
      if (c.exitCode !== null || c.signalCode !== null)
        throw new Error(`${command} on port ${port} exited at start: ${output.trim().slice(-1000)}`);
      if (Date.now() > deadline)
        throw new Error(
          `${command} on port ${port} did not accept connections within 15 s: ${output.trim().slice(-1000)}`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const halt = async (): Promise<void> => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill('SIGTERM');
    const timer = setTimeout(() => c.kill('SIGKILL'), 5000);
    await gone;
    clearTimeout(timer);
  };
  const reloaded = async (signal: () => unknown): Promise<void> => {
    const before = output.length;
    await signal();
    const deadline = Date.now() + 5000;
    while (!output.slice(before).includes('Reloaded server configuration')) {
      if (Date.now() > deadline) throw new Error(`${command} did not reload: ${output.slice(before).trim()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  try {
    await launch();
  } catch (err) {
    await halt();
    if (store) rmSync(store, { recursive: true, force: true });
    throw err;
  }
  return {
    url: url(port),
    port,
    get running() {
      return child !== undefined;
    },
    get pid() {
      return child?.pid;
    },
    halt,
    resume: launch,
    async restart(pauseMs = 0) {
      await halt();
      if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
      await launch();
    },
    async stop() {
      await halt();
      if (store) rmSync(store, { recursive: true, force: true });
    },
    reload: () => reloaded(() => child?.kill('SIGHUP')),
    reloaded,
  };
}

/** A port nothing listens on now at `host` (the kernel's pick for an ephemeral listener). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
