// The end-to-end harness: one whole Granule stack per test file, as real processes from dist/
// (`npm run test:e2e` builds first), on the machine's PostgreSQL, NATS (JetStream) and Redis.
// Everything a stack creates carries its own names — a database, a subject prefix, a Redis key
// prefix, a temporary directory — and `stop()` removes all of it.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  type WriteStream,
} from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { Redis } from 'ioredis';
import type { DataSource } from 'typeorm';
import {
  executionSubjects,
  isTerminalRunEvent,
  type ExecutionSubjects,
  type NatsRole,
  type RunEvent,
  type RunEventType,
} from '@granule/contracts';
import { createTestDatabase, type TestDatabase } from '@granule/event-store';
import {
  connectNats,
  deleteExecutionStreams,
  startPrivateNats,
  startPrivateRedis,
  waitUntil as sharedWaitUntil,
} from '@granule/messaging';
import type { PrivateServer } from '@granule/messaging';
import { TrustStore } from '@granule/nats-auth';
import { NATIVE_SPAWN_HELPER } from '@granule/task-runners';

/** Repository root (this file is test/e2e/). */
export const REPO_ROOT = path.resolve(__dirname, '../..');
const DIST = path.join(REPO_ROOT, 'dist');
const MAINS = {
  'graph-planner': path.join(DIST, 'apps/graph-planner/src/main.js'),
  'config-store': path.join(DIST, 'apps/config-store/src/main.js'),
  orchestrator: path.join(DIST, 'apps/orchestrator/src/main.js'),
  'node-agent': path.join(DIST, 'apps/node-agent/src/main.js'),
  cli: path.join(DIST, 'apps/cli/src/main.js'),
};
const NATS_URL = 'nats://127.0.0.1:4222';
const REDIS_URL = 'redis://127.0.0.1:6379';

/** Fixture folder of these tests. */
export const FIXTURES = path.join(__dirname, 'fixtures');
/** The example release and its nodes, as the README's manual run uses them. */
export const EXAMPLE_RELEASE = path.join(REPO_ROOT, 'examples/releases/example-release');
export const EXAMPLE_NODES = path.join(EXAMPLE_RELEASE, 'nodes.yaml');
export const EXAMPLE_V4_PLUGIN = path.join(REPO_ROOT, 'examples/plugins/example-v4');

/** What an agent launcher is told about the agent it starts. */
export interface AgentLaunchRequest {
  uid: string;
  natsUrl: string;
  subjectPrefix: string;
  /** The agent's `.creds` file on the control plane's side (absent without auth). */
  credsFile?: string;
  heartbeatSeconds: number;
}

/** How to start a process instead of `node <main>` in the control plane's environment. */
export interface ProcessLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
  /**
   * The pid that signals go to, given the pid of the started command (default: that pid), for a
   * command such as `unshare --fork` that does not pass signals on.
   */
  signalTarget?: (pid: number) => number | undefined;
}

export interface StackOptions {
  /** Names the database and the temporary directory (letters, digits, `_`). */
  name: string;
  /** Node uids to start an agent for (each with its own root dir). */
  agents: string[];
  /** Orchestrator settings; defaults: tick 200 ms, lease 3000 ms. */
  tickMs?: number;
  leaseMs?: number;
  /** Presence TTL the orchestrator hands to agents (default 3 s). */
  presenceTtlSeconds?: number;
  /** Agents' heartbeat interval (default 1 s). */
  heartbeatSeconds?: number;
  /** NATS and Redis of the stack's own (default: the machine's, on their standard ports). */
  natsUrl?: string;
  /** Lines of configuration for the stack's own NATS (with auth, e.g. `max_payload: 65536`). */
  natsSettings?: string[];
  redisUrl?: string;
  /** A database on this server (default: the machine's PostgreSQL) from which the stack's database is created. */
  databaseAdminUrl?: string;
  /** Extra environment for the orchestrator. */
  orchestratorEnv?: Record<string, string>;
  /** Extra environment for the agent of node `uid` (e.g. its own GRANULE_HEALTH_PORT). */
  agentEnv?: (uid: string) => Record<string, string>;
  /**
   * NATS with authorization on and Redis with a password, as an installation runs them (default
   * true): a trust store of the stack's own (`<dir>/auth`), a nats-server and a redis-server of
   * the stack's own unless `natsUrl` / `redisUrl` are given, and every process connecting with
   * its own credential (services, each agent, the CLI as an operator, the test as admin).
   */
  auth?: boolean;
  /** Extra environment for the config-store (e.g. its HTTP port and API token). */
  configStoreEnv?: Record<string, string>;
  /** The address the stack's own nats-server listens on (default 127.0.0.1): every process connects there. */
  natsHost?: string;
  /**
   * Starts each agent some other way than as a child process beside the services, e.g. inside a
   * network namespace and a private root of its own (test/fleet/netns.ts). It gets nothing of
   * the stack's environment but what it is told.
   */
  agentLauncher?: (request: AgentLaunchRequest) => ProcessLaunch;
}

/** An exited CLI run. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A run event as stored in `granule_events`. */
export interface StoredEvent {
  version: number;
  type: RunEventType;
  data: Record<string, unknown>;
  at: Date;
}

/** The event typed by its `type`, for reading `data` fields. */
export type EventData<T extends RunEventType> = Extract<RunEvent, { type: T }>['data'];

/** `data` of a stored event, typed by the event type. */
export function dataOf<T extends RunEventType>(event: StoredEvent, _type: T): EventData<T> {
  return event.data as EventData<T>;
}

/**
 * The shared `waitUntil` with a whole stack's defaults: 30 s, as processes start and settle more
 * slowly than one service in a test, and every 100 ms, as many checks here query the database.
 */
export function waitUntil<T>(
  condition: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  return sharedWaitUntil(condition, what, timeoutMs, 100);
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The lines of Node's deprecation warnings in a process's output (`(node:PID) [DEP0…] DeprecationWarning: …`). */
export function deprecationLines(output: string): string[] {
  return output.split('\n').filter((line) => line.includes('DeprecationWarning'));
}

/** One service or agent: a node process with its output in `<workDir>/logs/<name>.log`. */
export class StackProcess {
  private child?: ChildProcess;
  private exited?: Promise<void>;
  private output = '';
  private log?: WriteStream;
  /** Deprecation warnings printed by earlier starts (the output is reset at each start). */
  private earlierDeprecations: string[] = [];
  /** How many times it was started. */
  starts = 0;

  constructor(
    readonly name: string,
    private readonly main: string,
    private readonly env: Record<string, string>,
    private readonly readyLine: string,
    private readonly logFile: string,
    private readonly cwd: string = REPO_ROOT,
    private readonly launch?: ProcessLaunch,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Everything printed since the last start. */
  get text(): string {
    return this.output;
  }

  /** The lines of Node's deprecation warnings it printed, over every start. */
  get deprecations(): string[] {
    return [...this.earlierDeprecations, ...deprecationLines(this.output)];
  }

  /** Starts the process and waits for the line saying it is ready. */
  async start(timeoutMs = 30_000): Promise<void> {
    if (this.running) throw new Error(`${this.name} is already running`);
    this.earlierDeprecations.push(...deprecationLines(this.output));
    this.output = '';
    this.starts++;
    this.log ??= createWriteStream(this.logFile, { flags: 'a' });
    this.log.write(`--- start ${this.starts} at ${new Date().toISOString()}\n`);
    const child = this.launch
      ? spawn(this.launch.command, this.launch.args, {
          cwd: '/',
          env: this.launch.env,
          stdio: ['ignore', 'pipe', 'pipe'],
        })
      : spawn(process.execPath, [this.main], { cwd: this.cwd, env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const collect = (data: Buffer): void => {
      this.output += data.toString('utf8');
      this.log?.write(data);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    await waitUntil(
      () => this.output.includes(this.readyLine) || child.exitCode !== null || child.signalCode !== null,
      `${this.name} to start`,
      timeoutMs,
    );
    if (!this.running)
      throw new Error(`${this.name} exited at start (code ${child.exitCode}): ${this.output.trim().slice(-2000)}`);
  }

  /** Sends `signal` and waits until the process is gone (SIGKILL after `graceMs`). */
  async kill(signal: NodeJS.Signals = 'SIGKILL', graceMs = 5000): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    const target = child.pid !== undefined && signal !== 'SIGKILL' ? this.launch?.signalTarget?.(child.pid) : undefined;
    try {
      if (target === undefined) child.kill(signal);
      else process.kill(target, signal);
    } catch {
      // The target ended between the look-up and the signal: the wait below sees the exit.
    }
    let timer: NodeJS.Timeout | undefined;
    const gone = await Promise.race([
      this.exited?.then(() => true),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), graceMs))),
    ]);
    clearTimeout(timer);
    if (!gone) {
      child.kill('SIGKILL');
      await this.exited;
    }
  }

  async close(): Promise<void> {
    await this.kill('SIGTERM', 3000);
    await new Promise<void>((resolve) => (this.log ? this.log.end(() => resolve()) : resolve()));
    this.log = undefined;
  }
}

/**
 * A whole stack: graph-planner, orchestrator and node agents as real processes sharing a fresh
 * database, a unique subject prefix (`e2e<hex>`, which is also the Redis key prefix) and a
 * temporary directory holding each agent's root (`<dir>/r<uid>`), the process logs and the
 * ledger file tasks append to (`$GRANULE_E2E_LEDGER`; `$GRANULE_E2E_DIR` is the directory).
 */
export class E2eStack {
  readonly processes = new Map<string, StackProcess>();
  /** Deprecation warnings the CLI runs of this stack printed. */
  private readonly cliDeprecations: string[] = [];
  readonly subjects: ExecutionSubjects;
  private nats?: NatsConnection;
  private redis?: Redis;
  /** The stack's trust store, when it runs with auth. */
  trust?: TrustStore;
  /** The stack's own nats-server and redis-server, when it started them. */
  natsServer?: PrivateServer;
  redisServer?: PrivateServer;

  private constructor(
    readonly options: StackOptions,
    readonly prefix: string,
    readonly db: TestDatabase,
    readonly dir: string,
  ) {
    this.subjects = executionSubjects(prefix);
  }

  /** Creates the database and directories and starts graph-planner, the orchestrator and every agent. */
  static async start(options: StackOptions): Promise<E2eStack> {
    assertBuilt();
    const prefix = `e2e${randomBytes(4).toString('hex')}`;
    const db = await createTestDatabase(`e2e_${options.name}`, {
      migrations: [],
      ...(options.databaseAdminUrl ? { adminUrl: options.databaseAdminUrl } : {}),
    });
    const dir = await mkdtemp(path.join(os.tmpdir(), `granule-e2e-${options.name}-`));
    mkdirSync(path.join(dir, 'logs'));
    const stack = new E2eStack(options, prefix, db, dir);
    try {
      if (options.auth !== false) await stack.setUpAuth();
      await stack.service('graph-planner').start();
      // One after the other: both run the same migrations on the fresh database.
      await stack.service('orchestrator').start();
      await Promise.all(options.agents.map((uid) => stack.agent(uid).start()));
      await stack.waitForPresence(options.agents);
    } catch (err) {
      await stack.stop();
      throw err;
    }
    return stack;
  }

  get natsUrl(): string {
    return this.options.natsUrl ?? this.natsServer?.url ?? NATS_URL;
  }

  get redisUrl(): string {
    return this.options.redisUrl ?? this.redisServer?.url ?? REDIS_URL;
  }

  /** A trust store, a NATS that includes its server configuration, a Redis with a password, and everyone's credentials. */
  private async setUpAuth(): Promise<void> {
    this.trust = await TrustStore.create(path.join(this.dir, 'auth'), { prefix: this.prefix });
    mkdirSync(path.join(this.dir, 'auth', 'creds'), { recursive: true, mode: 0o700 });
    const people: Array<{ name: string; role: NatsRole }> = [
      { name: 'orchestrator', role: 'orchestrator' },
      { name: 'graph-planner', role: 'graph-planner' },
      { name: 'config-store', role: 'config-store' },
      { name: 'e2e-admin', role: 'admin' },
      { name: 'e2e-operator', role: 'operator' },
      { name: 'e2e-viewer', role: 'viewer' },
    ];
    for (const who of people) await this.issue(who.name, who.role);
    for (const uid of this.options.agents) await this.enroll(uid);
    if (!this.options.natsUrl)
      this.natsServer = await startPrivateNats({
        include: this.trust.serverIncludePath,
        ...(this.options.natsSettings ? { settings: this.options.natsSettings } : {}),
        ...(this.options.natsHost ? { host: this.options.natsHost } : {}),
      });
    if (!this.options.redisUrl)
      this.redisServer = await startPrivateRedis({ password: randomBytes(12).toString('hex') });
  }

  private async issue(name: string, role: NatsRole, node?: string): Promise<string> {
    const trust = this.trust as TrustStore;
    const { creds } = await trust.issue({ name, role, ...(node ? { node } : {}) });
    const file = this.credsFile(name);
    writeFileSync(file, creds, { mode: 0o600 });
    return file;
  }

  /** Issues node `uid`'s agent credential (done by `start` for the agents it starts). */
  enroll(uid: string): Promise<string> {
    return this.issue(`agent-${uid}`, 'agent', uid);
  }

  /** Where the `.creds` file of identity `name` is (`orchestrator`, `agent-<uid>`, `e2e-operator`, ...). */
  credsFile(name: string): string {
    return path.join(this.dir, 'auth', 'creds', `${name}.creds`);
  }

  /** `GRANULE_NATS_CREDS` of a process running as `name` (nothing without auth). */
  private credsEnv(name: string): Record<string, string> {
    return this.trust ? { GRANULE_NATS_CREDS: this.credsFile(name) } : {};
  }

  /** The ledger file tasks append `<run> <task>@<node>` lines to. */
  get ledgerPath(): string {
    return path.join(this.dir, 'ledger.log');
  }

  /** Root dir of the agent of node `uid`. */
  agentRoot(uid: string): string {
    return path.join(this.dir, `r${uid}`);
  }

  /** Environment every process of the stack starts from (no GRANULE_* of the caller leaks in). */
  private baseEnv(): Record<string, string> {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env))
      if (v !== undefined && !k.startsWith('GRANULE_') && k !== 'NODE_OPTIONS') env[k] = v;
    return {
      ...env,
      GRANULE_NATS_URL: this.natsUrl,
      GRANULE_REDIS_URL: this.redisUrl,
      GRANULE_SUBJECT_PREFIX: this.prefix,
      GRANULE_E2E_DIR: this.dir,
      GRANULE_E2E_LEDGER: this.ledgerPath,
      XDG_CONFIG_HOME: this.dir,
      // Several stacks (and whatever else runs here) must not fight over the health ports.
      GRANULE_HEALTH_PORT: '0',
    };
  }

  /**
   * The graph-planner, orchestrator or config-store process (created on first use, not
   * started). `orchestrator-2` is a second orchestrator replica (not started by `start`); each
   * replica's GRANULE_INSTANCE_ID is its name here.
   */
  service(name: 'graph-planner' | 'orchestrator' | 'orchestrator-2' | 'config-store'): StackProcess {
    const existing = this.processes.get(name);
    if (existing) return existing;
    const o = this.options;
    if (name === 'config-store') {
      // Not started by `start`: tests that plan environments start it after the orchestrator.
      const env = {
        ...this.baseEnv(),
        ...this.credsEnv('config-store'),
        GRANULE_DATABASE_URL: this.db.url,
        GRANULE_RUN_MIGRATIONS: 'true',
        GRANULE_DATABASE_CREATE: 'false',
        GRANULE_PREINSTALLED_RELEASE: '',
        ...o.configStoreEnv,
      };
      const proc = new StackProcess(name, MAINS[name], env, 'NATS API on', path.join(this.dir, 'logs', `${name}.log`));
      this.processes.set(name, proc);
      return proc;
    }
    const env: Record<string, string> =
      name === 'graph-planner'
        ? {
            ...this.baseEnv(),
            ...this.credsEnv('graph-planner'),
            GRANULE_DATABASE_URL: this.db.url,
            GRANULE_RUN_MIGRATIONS: '1',
          }
        : {
            ...this.baseEnv(),
            ...this.credsEnv('orchestrator'),
            GRANULE_DATABASE_URL: this.db.url,
            GRANULE_RUN_MIGRATIONS: '1',
            GRANULE_TICK_MS: String(o.tickMs ?? 200),
            GRANULE_LEASE_MS: String(o.leaseMs ?? 3000),
            GRANULE_HEARTBEAT_SECONDS: String(this.options.heartbeatSeconds ?? 1),
            GRANULE_PRESENCE_TTL_SECONDS: String(o.presenceTtlSeconds ?? 3),
            GRANULE_INSTANCE_ID: name,
            ...o.orchestratorEnv,
          };
    const ready = name === 'graph-planner' ? 'answering' : '"msg":"orchestrator started"';
    const main = name === 'graph-planner' ? MAINS[name] : MAINS.orchestrator;
    const proc = new StackProcess(name, main, env, ready, path.join(this.dir, 'logs', `${name}.log`));
    this.processes.set(name, proc);
    return proc;
  }

  /**
   * The agent of node `uid` (created on first use, not started). `installed` runs another entry
   * file instead of dist/'s (an installed agent package) in `cwd` with exactly `env`, which the
   * caller composes (stopped, and its task processes found, like every agent of the stack).
   */
  agent(uid: string, installed?: { main: string; cwd: string; env: Record<string, string> }): StackProcess {
    const name = `agent-${uid}`;
    const existing = this.processes.get(name);
    if (existing) return existing;
    if (installed) {
      const proc = new StackProcess(
        name,
        installed.main,
        installed.env,
        '"msg":"node-agent started"',
        path.join(this.dir, 'logs', `${name}.log`),
        installed.cwd,
      );
      this.processes.set(name, proc);
      return proc;
    }
    // NATS is an agent's only connection: it gets no Redis URL (and no database URL).
    const { GRANULE_REDIS_URL: _redis, ...base } = this.baseEnv();
    const env = {
      ...base,
      ...this.credsEnv(`agent-${uid}`),
      GRANULE_NODE_UID: uid,
      GRANULE_ROOT: this.agentRoot(uid),
      GRANULE_HEARTBEAT_SECONDS: String(this.options.heartbeatSeconds ?? 1),
      GRANULE_AGENT_HOSTNAME: `host-${uid}`,
      ...this.options.agentEnv?.(uid),
    };
    const launch = this.options.agentLauncher?.({
      uid,
      natsUrl: this.natsUrl,
      subjectPrefix: this.prefix,
      ...(this.trust ? { credsFile: this.credsFile(name) } : {}),
      heartbeatSeconds: this.options.heartbeatSeconds ?? 1,
    });
    const proc = new StackProcess(
      name,
      MAINS['node-agent'],
      env,
      '"msg":"node-agent started"',
      path.join(this.dir, 'logs', `${name}.log`),
      REPO_ROOT,
      launch,
    );
    this.processes.set(name, proc);
    return proc;
  }

  /**
   * Runs the CLI (`./granule` without its build check) against this stack, as an operator
   * unless `as` names another identity (`e2e-viewer`, `e2e-admin`, `agent-<uid>`, ...).
   */
  granule(
    args: string[],
    options: {
      timeoutMs?: number;
      env?: Record<string, string>;
      as?: string;
      /** Told of each piece of stdout as it comes (a test of a command that prints live). */
      onStdout?: (text: string) => void;
    } = {},
  ): Promise<CliResult> {
    const timeoutMs = options.timeoutMs ?? 120_000;
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [MAINS.cli, ...args], {
        cwd: REPO_ROOT,
        env: { ...this.baseEnv(), ...this.credsEnv(options.as ?? 'e2e-operator'), ...options.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        stdout += d;
        options.onStdout?.(d);
      });
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(
          new Error(
            `granule ${args.join(' ')} did not end within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`,
          ),
        );
      }, timeoutMs);
      child.once('exit', (code) => {
        clearTimeout(timer);
        this.cliDeprecations.push(...deprecationLines(stderr).map((line) => `granule ${args[0]}: ${line}`));
        resolve({ code, stdout, stderr });
      });
    });
  }

  /**
   * The command line and environment `granule` runs with against this stack, for a test that
   * spawns the CLI itself (its own stdin, a pseudo-terminal, signals).
   */
  cliCommand(args: string[], as = 'e2e-operator'): { argv: string[]; env: Record<string, string>; cwd: string } {
    return {
      argv: [process.execPath, MAINS.cli, ...args],
      env: { ...this.baseEnv(), ...this.credsEnv(as) },
      cwd: REPO_ROOT,
    };
  }

  /**
   * Throws unless the CLI run exited 0, with its output and the tail of every process log, so a
   * failure on CI says what went wrong without a rerun.
   */
  assertExitedOk(result: CliResult, what: string): void {
    if (result.code === 0) return;
    throw new Error(
      `${what} exited ${result.code}\n--- stdout\n${result.stdout.slice(-4000)}\n--- stderr\n${result.stderr.slice(-4000)}\n${this.logsTail(40)}`,
    );
  }

  get dataSource(): DataSource {
    return this.db.dataSource;
  }

  /** A run's events straight from PostgreSQL, in stream order. */
  async events(runId: string): Promise<StoredEvent[]> {
    const rows: { stream_version: string; type: RunEventType; data: Record<string, unknown>; created_at: Date }[] =
      await this.dataSource.query(
        'SELECT stream_version, type, data, created_at FROM granule_events WHERE stream_id = $1 ORDER BY stream_version',
        [`run-${runId}`],
      );
    return rows.map((r) => ({ version: Number(r.stream_version), type: r.type, data: r.data, at: r.created_at }));
  }

  /** Waits until the run has an event `type` (optionally matching `where`) and returns the events up to now. */
  async waitForEvent(
    runId: string,
    type: RunEventType,
    where: (e: StoredEvent) => boolean = () => true,
    timeoutMs = 60_000,
  ): Promise<StoredEvent[]> {
    return waitUntil(
      async () => {
        const events = await this.events(runId);
        return events.some((e) => e.type === type && where(e)) ? events : undefined;
      },
      `${type} in run ${runId}`,
      timeoutMs,
    );
  }

  /** Waits for the run's terminal event and returns every event. */
  async waitForEnd(runId: string, timeoutMs = 90_000): Promise<StoredEvent[]> {
    return waitUntil(
      async () => {
        const events = await this.events(runId);
        return events.length > 0 && isTerminalRunEvent(events[events.length - 1].type) ? events : undefined;
      },
      `run ${runId} to end`,
      timeoutMs,
    );
  }

  /** Ledger lines (`<run> <task>@<node>`), optionally of one run only (then without the run id). */
  ledger(runId?: string): string[] {
    if (!existsSync(this.ledgerPath)) return [];
    const lines = readFileSync(this.ledgerPath, 'utf8').split('\n').filter(Boolean);
    if (runId === undefined) return lines;
    return lines.filter((l) => l.startsWith(`${runId} `)).map((l) => l.slice(runId.length + 1));
  }

  /** Makes `task@node` fail (fixtures check `$GRANULE_E2E_DIR/fail/<task>@<node>`) or, with `on = false`, succeed again. */
  setFailing(key: string, on = true): void {
    const dir = path.join(this.dir, 'fail');
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, key);
    if (on) writeFileSync(file, '');
    else rmSync(file, { force: true });
  }

  /** Makes `task@node` sleep `seconds` (fixtures read `$GRANULE_E2E_DIR/slow/<task>@<node>`); 0 removes the setting. */
  setSlow(key: string, seconds: number): void {
    const dir = path.join(this.dir, 'slow');
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, key);
    if (seconds > 0) writeFileSync(file, `${seconds}\n`);
    else rmSync(file, { force: true });
  }

  /** A NATS connection of the test itself (closed by `stop`). */
  async natsConnection(): Promise<NatsConnection> {
    this.nats ??= await connectNats(
      { natsUrl: this.natsUrl, ...(this.trust ? { natsCreds: this.credsFile('e2e-admin') } : {}) },
      `granule-e2e-${this.prefix}`,
    );
    return this.nats;
  }

  /** A Redis client of the test itself (closed by `stop`). */
  redisClient(): Redis {
    this.redis ??= new Redis(this.redisUrl, { maxRetriesPerRequest: 1 });
    return this.redis;
  }

  /** Waits until every listed agent's presence key is in Redis. */
  async waitForPresence(uids: string[], timeoutMs = 15_000): Promise<void> {
    const redis = this.redisClient();
    await waitUntil(
      async () =>
        (await Promise.all(uids.map((u) => redis.exists(`${this.prefix}:presence:${u}`)))).every((n) => n === 1),
      `presence of agents ${uids.join(', ')}`,
      timeoutMs,
    );
  }

  /** Pids of processes started by this stack's tasks that are still alive (found by `$GRANULE_E2E_LEDGER` in their environment). */
  taskProcesses(): number[] {
    const marker = `GRANULE_E2E_LEDGER=${this.ledgerPath}\0`;
    const own = new Set([...this.processes.values()].map((p) => p.pid));
    const found: number[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const pid = Number(entry);
      if (pid === process.pid || own.has(pid)) continue;
      try {
        if (!`${readFileSync(`/proc/${pid}/environ`, 'latin1')}\0`.includes(marker)) continue;
        // An agent's spawn helper inherits the agent's environment but is part of the agent.
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'latin1');
        if (cmdline.includes(path.basename(NATIVE_SPAWN_HELPER))) continue;
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
        if (state !== 'Z' && state !== 'X') found.push(pid);
      } catch {
        // gone, or not ours to read
      }
    }
    return found;
  }

  /**
   * Stops everything and removes what the stack created: processes (and task processes an
   * agent killed with SIGKILL left behind), the JetStream streams of the prefix, Redis keys
   * `<prefix>:*`, the database and the temporary directory (kept when GRANULE_E2E_KEEP=1).
   */
  async stop(): Promise<void> {
    const problems: string[] = [];
    const attempt = async (what: string, fn: () => Promise<unknown> | unknown): Promise<void> => {
      try {
        await fn();
      } catch (err) {
        problems.push(`${what}: ${(err as Error).message}`);
      }
    };
    const agents = [...this.processes.values()].filter((p) => p.name.startsWith('agent-'));
    await Promise.all(agents.map((p) => attempt(`stop ${p.name}`, () => p.close())));
    for (const name of ['config-store', 'orchestrator', 'orchestrator-2', 'graph-planner']) {
      const p = this.processes.get(name);
      if (p) await attempt(`stop ${name}`, () => p.close());
    }
    for (const pid of this.taskProcesses())
      await attempt(`kill task process ${pid}`, () => process.kill(pid, 'SIGKILL'));
    await attempt('delete JetStream streams', async () =>
      deleteExecutionStreams(await this.natsConnection(), this.prefix),
    );
    await attempt('close NATS', () => this.nats?.close());
    await attempt('delete Redis keys', async () => {
      const redis = this.redisClient();
      const keys = await redis.keys(`${this.prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    });
    await attempt('drop the database', () => this.db.drop());
    // Like the jest environment for the test's own process (tools/jest-environment.cjs): a
    // service, agent or CLI run that printed a DeprecationWarning fails the suite.
    const deprecations = [
      ...[...this.processes.values()].flatMap((p) => p.deprecations.map((line) => `${p.name}: ${line}`)),
      ...this.cliDeprecations,
    ];
    if (deprecations.length > 0 && process.env.GRANULE_ALLOW_DEPRECATIONS !== '1')
      problems.push(`DeprecationWarning printed; fix the call:\n${[...new Set(deprecations)].join('\n')}`);
    await attempt("stop the stack's NATS", () => this.natsServer?.stop());
    await attempt("stop the stack's Redis", () => this.redisServer?.stop());
    if (process.env.GRANULE_E2E_KEEP === '1') process.stderr.write(`e2e stack ${this.prefix}: kept ${this.dir}\n`);
    else await attempt('remove the temporary directory', () => rmSync(this.dir, { recursive: true, force: true }));
    if (problems.length > 0) throw new Error(`e2e teardown: ${problems.join('; ')}`);
  }

  /** The last lines of every process log, for failure messages. */
  logsTail(lines = 20): string {
    return [...this.processes.values()]
      .map((p) => `--- ${p.name}\n${p.text.trim().split('\n').slice(-lines).join('\n')}`)
      .join('\n');
  }
}

/** dist/ must be built (`npm run test:e2e` does it; alone: `npm run build`). */
export function assertBuilt(): void {
  const missing = Object.values(MAINS).filter((m) => !existsSync(m));
  if (!existsSync(path.join(DIST, '.stamp')) || missing.length > 0) {
    throw new Error(
      `dist/ is not built (${missing.length ? `missing ${missing.map((m) => path.relative(REPO_ROOT, m)).join(', ')}` : 'no dist/.stamp'}): run npm run build, or npm run test:e2e which builds first`,
    );
  }
}

/** Keys of events of `type` (their `data.key`), in log order. */
export function keysOf(events: StoredEvent[], type: RunEventType): string[] {
  return events.filter((e) => e.type === type).map((e) => String(e.data.key));
}

/** Version of the first event of `type` with `data.key === key` (Infinity when absent). */
export function versionOf(events: StoredEvent[], type: RunEventType, key?: string): number {
  const e = events.find((x) => x.type === type && (key === undefined || x.data.key === key));
  return e ? e.version : Infinity;
}
