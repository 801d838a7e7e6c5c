// The multi-host tier's hosts: Linux network namespaces on a bridge, each with a root file
// system of its own (test/fleet/README.md says exactly what is isolated). The control plane
// (nats-server, PostgreSQL, Redis, the services, the CLI, the test) stays in the machine's
// namespaces; an agent reaches it only through the bridge, and only NATS listens there.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_TEST_ADMIN_URL } from '@granule/event-store';
import { extractAgentPackage, installAgentPackage } from '../e2e/agent-package';
import type { AgentLaunchRequest, ProcessLaunch } from '../e2e/stack';
import { REPO_ROOT } from '../e2e/stack';

/** Names of everything a fleet creates start with these, followed by the pid of the test process that owns it. */
const NETNS_PREFIX = 'gfleet-';
const LINK_PREFIX = 'gf';
const DIR_PREFIX = 'granule-fleet-';
const ENTER_HOST = path.join(__dirname, 'enter-host.sh');
const REAP_FLEET = path.join(__dirname, 'reap-fleet.sh');
/** Inside every host: where the agent works, and its credential. */
export const HOST_AGENT_ROOT = '/var/lib/granule';
export const HOST_AGENT_CREDS = '/etc/granule/agent.creds';
const HOST_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** State folders of packages installed in the machine's /usr, which every host's /var gets empty (when the machine has them). */
const PACKAGE_VAR_DIRS = ['/var/lib/puppet', '/var/cache/puppet'];

/** A read-only bind of a control-plane path into a host's root. */
export interface HostBind {
  source: string;
  target: string;
}

/** How the agent is on a host: what the host's root gets bound in, and the command that runs it there. */
export interface AgentCommand {
  binds: HostBind[];
  command: string[];
}

/**
 * How an agent gets onto a host, run when the stack creates the host's agent (it then knows the
 * NATS URL, the subject prefix and the credential). `agentFromDist` binds the built tree
 * read-only; `agentFromPackage` installs the one-file agent package on the host's disk with its
 * `install.sh --root` and runs it with no binds at all.
 */
export interface AgentInstall {
  readonly name: string;
  install(fleet: Fleet, request: AgentLaunchRequest): AgentCommand;
}

/** The agent from this checkout's dist/ and node_modules, bound read-only at /opt/granule (nothing else of the checkout). */
export const agentFromDist: AgentInstall = {
  name: 'dist/ and node_modules bound read-only at /opt/granule',
  install: () => {
    const binds: HostBind[] = [
      { source: path.join(REPO_ROOT, 'dist'), target: '/opt/granule/dist' },
      { source: realpathSync(path.join(REPO_ROOT, 'node_modules')), target: '/opt/granule/node_modules' },
    ];
    // The machine's /usr is every host's; a Node.js installed elsewhere is bound where it is.
    const node = realpathSync(process.execPath);
    if (!node.startsWith('/usr/')) binds.push({ source: path.dirname(node), target: path.dirname(node) });
    return { binds, command: [node, '/opt/granule/dist/apps/node-agent/src/main.js'] };
  },
};

/**
 * The agent package `file` (`granule agent package`), extracted in the fleet's control-plane
 * folder and installed on the host's disk by its `install.sh --root <disk>` with the host's NATS
 * settings and credential, as an operator installs it on a host (ADR 0027). The host runs what
 * the install wrote: `/opt/granule-agent/current/app/node-agent.js` with the settings of
 * `/etc/granule/agent.env` (its own state directory among them) — nothing of the checkout.
 */
export function agentFromPackage(file: string): AgentInstall {
  return {
    name: `the agent package ${path.basename(file)} installed with install.sh --root`,
    install: (fleet, request) => {
      const pkg = extractAgentPackage(file, path.join(fleet.controlDir, `agent-package-${request.uid}`));
      installAgentPackage(pkg, fleet.disk(request.uid), {
        nodeUid: request.uid,
        natsUrl: request.natsUrl,
        subjectPrefix: request.subjectPrefix,
        ...(request.credsFile ? { creds: request.credsFile } : {}),
        args: ['--no-start'],
      });
      // What the unit's EnvironmentFile= and ExecStart= do, without systemd.
      const start = 'set -a; . /etc/granule/agent.env; set +a; exec "$0" /opt/granule-agent/current/app/node-agent.js';
      return { binds: [], command: ['/bin/sh', '-c', start, realpathSync(process.execPath)] };
    },
  };
}

export interface FleetOptions {
  /** Node uids, one host each (letters and digits, at most 3 characters: they end interface names). */
  uids: string[];
  /** How each host gets its agent (default `agentFromDist`), asked when its agent is created. */
  install?: (uid: string) => AgentInstall;
}

/** What a command run inside a host printed. */
export interface HostExecResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[]): string {
  return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** `ip ...`, ignoring failure (teardown of what may already be gone). */
function ipQuiet(args: string[]): void {
  spawnSync('ip', args, { stdio: 'ignore' });
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** What the kernel says when it will not make a namespace (no privilege, or namespaces not built in). */
const REFUSED = /not permitted|permission denied|invalid argument|not supported|not implemented/i;

/** Bits of `CapEff` in /proc/self/status (linux/capability.h). */
const CAP_NET_ADMIN = 12;
const CAP_SYS_ADMIN = 21;

/**
 * Why this process lacks the privilege the tier needs (namespaces, veth links and mounts need
 * `CAP_SYS_ADMIN` and `CAP_NET_ADMIN`, which root has), or undefined when it has it. `status`
 * is the text of /proc/self/status (a parameter for the unit test).
 */
export function missingPrivilege(status: string, uid = process.getuid?.() ?? -1): string | undefined {
  const hex = /^CapEff:\s*([0-9a-f]+)$/im.exec(status)?.[1];
  const caps = hex === undefined ? 0n : BigInt(`0x${hex}`);
  const missing = [
    ['CAP_SYS_ADMIN', CAP_SYS_ADMIN],
    ['CAP_NET_ADMIN', CAP_NET_ADMIN],
  ].filter(([, bit]) => (caps & (1n << BigInt(bit))) === 0n);
  if (missing.length === 0) return undefined;
  return (
    `the multi-host tier needs root (or CAP_SYS_ADMIN and CAP_NET_ADMIN) to create namespaces, links and mounts; ` +
    `this process runs as uid ${uid} without ${missing.map(([name]) => name).join(' and ')}: run it as root ` +
    `(sudo npm run test:fleet)`
  );
}

/**
 * Why this process cannot run the tier (it is not root nor has the capabilities, or the kernel
 * refuses a network namespace, or mount, UTS or PID namespaces inside one), or undefined when it
 * can. Creates and deletes a namespace
 * of its own. Anything else (a missing `ip` or `unshare`) is not a reason to skip: `Fleet.create`
 * then fails saying what is missing.
 */
export function fleetUnsupportedReason(): string | undefined {
  if (process.platform !== 'linux') return `network namespaces need Linux (this is ${process.platform})`;
  const privilege = missingPrivilege(readFileSync('/proc/self/status', 'utf8'));
  if (privilege) return privilege;
  const probe = `${NETNS_PREFIX}${process.pid}-probe`;
  const add = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' });
  if (add.error) return undefined;
  if (add.status !== 0)
    return REFUSED.test(add.stderr)
      ? `the kernel refused a network namespace: ip netns add: ${add.stderr.trim()}`
      : undefined;
  try {
    const inside = spawnSync('ip', ['netns', 'exec', probe, 'unshare', '--mount', '--uts', '--pid', '--fork', 'true'], {
      encoding: 'utf8',
    });
    if (inside.status !== 0 && REFUSED.test(inside.stderr ?? ''))
      return `the kernel refused mount, UTS or PID namespaces: ${(inside.stderr ?? '').trim()}`;
    return undefined;
  } finally {
    ipQuiet(['netns', 'del', probe]);
  }
}

/** Throws naming the commands the tier needs that this machine lacks. */
function assertTools(): void {
  const missing = ['ip', 'unshare', 'pivot_root', 'mount', 'umount', 'mktemp'].filter(
    (tool) => spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status !== 0,
  );
  if (missing.length > 0)
    throw new Error(
      `the multi-host tier needs ${missing.join(', ')} (iproute2, util-linux, coreutils): install them, or run without test/fleet`,
    );
}

/**
 * Removes what fleets of test processes that no longer run left behind (a SIGKILLed jest, a
 * crash): their hosts' processes, namespaces, links and directories. A fleet of a test process
 * still running is left alone.
 */
export function removeFleetLeftovers(): string[] {
  const removed: string[] = [];
  const dead = (pid: string): boolean => pid !== String(process.pid) && !pidAlive(Number(pid));
  for (const line of run('ip', ['netns', 'list']).split('\n')) {
    const name = line.split(' ')[0];
    const m = new RegExp(`^${NETNS_PREFIX}(\\d+)-`).exec(name);
    if (!m || !dead(m[1])) continue;
    killNetnsProcesses(name);
    ipQuiet(['netns', 'del', name]);
    removed.push(`netns ${name}`);
  }
  for (const line of run('ip', ['-o', 'link', 'show']).split('\n')) {
    const name = /^\d+: ([^:@]+)/.exec(line)?.[1];
    const m = name ? new RegExp(`^${LINK_PREFIX}(\\d+)[bh]`).exec(name) : null;
    if (!name || !m || !dead(m[1])) continue;
    ipQuiet(['link', 'del', name]);
    removed.push(`link ${name}`);
  }
  for (const entry of readdirSync(os.tmpdir())) {
    const m = new RegExp(`^${DIR_PREFIX}(\\d+)-`).exec(entry);
    if (!m || !dead(m[1])) continue;
    rmSync(path.join(os.tmpdir(), entry), { recursive: true, force: true });
    removed.push(`directory ${entry}`);
  }
  return removed;
}

/** Makes the folders of `source` (not its files) at `target`, with their modes and owners; nothing when `source` is missing. */
function copyDirectoryTree(source: string, target: string): void {
  const info = lstatSync(source, { throwIfNoEntry: false });
  if (!info?.isDirectory()) return;
  mkdirSync(target, { recursive: true });
  chmodSync(target, info.mode & 0o7777);
  chownSync(target, info.uid, info.gid);
  for (const entry of readdirSync(source, { withFileTypes: true }))
    if (entry.isDirectory()) copyDirectoryTree(path.join(source, entry.name), path.join(target, entry.name));
}

function killNetnsProcesses(netns: string): void {
  const pids = spawnSync('ip', ['netns', 'pids', netns], { encoding: 'utf8' }).stdout ?? '';
  for (const pid of pids.split('\n').filter(Boolean)) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** A free 10.231.X.0/24: no address or route of this machine is in it. */
function pickSubnet(): string {
  const used = run('ip', ['-4', '-o', 'addr', 'show']) + run('ip', ['-4', 'route', 'show', 'table', 'all']);
  const start = 20 + (process.pid % 200);
  for (let i = 0; i < 230; i++) {
    const x = 20 + ((start - 20 + i) % 230);
    if (!used.includes(`10.231.${x}.`)) return `10.231.${x}`;
  }
  throw new Error('no free 10.231.X.0/24 subnet for the fleet bridge');
}

/**
 * Starts `reap-fleet.sh`, which removes the fleet of process `owner` (default: this one) once that
 * process is gone, in a session of its own. Signal handlers cannot do this job in a test: jest
 * gives test code a copy of `process` whose `on('SIGINT')` never fires, and nothing runs after a
 * SIGKILL.
 */
export function startReaper(dir: string, owner = process.pid): ChildProcess {
  const adminUrl = process.env.GRANULE_TEST_DATABASE_URL ?? DEFAULT_TEST_ADMIN_URL;
  const reaper = spawn('/bin/sh', [REAP_FLEET, String(owner), dir, adminUrl], {
    detached: true,
    stdio: 'ignore',
  });
  reaper.unref();
  return reaper;
}

/**
 * N hosts on one bridge. Per host `<uid>`: network namespace `gfleet-<pid>-<uid>` with `eth0`
 * (address `<subnet>.<10+i>/24`, no route beyond the subnet) whose peer `gf<pid>h<uid>` is a
 * port of the bridge `gf<pid>b` (address `<subnet>.1`, in the machine's namespace); a root file
 * system `<dir>/hosts/<uid>` entered by `enter-host.sh` in new mount, UTS, IPC and PID
 * namespaces.
 */
export class Fleet {
  private destroyed = false;

  private constructor(
    private readonly options: FleetOptions,
    readonly uids: string[],
    readonly subnet: string,
    /** The fleet's directory on the control plane's side: `hosts/<uid>` (each host's disk) and `control/` (no host sees either but its own disk). */
    readonly dir: string,
    private readonly reaper: ChildProcess,
  ) {}

  /** Creates the bridge and every host's namespace, link and disk. */
  static create(options: FleetOptions): Promise<Fleet> {
    for (const uid of options.uids)
      if (!/^[A-Za-z0-9]{1,3}$/.test(uid))
        throw new Error(`fleet: node uid '${uid}': expected 1 to 3 letters or digits`);
    assertTools();
    const left = removeFleetLeftovers();
    if (left.length > 0) process.stderr.write(`fleet: removed leftovers of an earlier run: ${left.join(', ')}\n`);
    const dir = mkdtempSync(path.join(os.tmpdir(), `${DIR_PREFIX}${process.pid}-`));
    const fleet = new Fleet(options, options.uids, pickSubnet(), dir, startReaper(dir));
    try {
      mkdirSync(fleet.controlDir, { recursive: true, mode: 0o700 });
      run('ip', ['link', 'add', fleet.bridge, 'type', 'bridge']);
      run('ip', ['addr', 'add', `${fleet.bridgeAddress}/24`, 'dev', fleet.bridge]);
      run('ip', ['link', 'set', fleet.bridge, 'up']);
      options.uids.forEach((uid, i) => fleet.addHost(uid, i));
    } catch (err) {
      fleet.destroySync();
      throw err;
    }
    return Promise.resolve(fleet);
  }

  /**
   * The `name` of the fleet's `E2eStack`: it carries this process's id, so that `reap-fleet.sh`
   * finds the stack's database and directory if the test process is interrupted.
   */
  get stackName(): string {
    return `fleet${process.pid}`;
  }

  /** The bridge's address: where the control plane's nats-server listens for the hosts. */
  get bridgeAddress(): string {
    return `${this.subnet}.1`;
  }

  get bridge(): string {
    return `${LINK_PREFIX}${process.pid}b`;
  }

  /** A folder of the control plane's (inputs, packages): no host can reach it. */
  get controlDir(): string {
    return path.join(this.dir, 'control');
  }

  netns(uid: string): string {
    return `${NETNS_PREFIX}${process.pid}-${uid}`;
  }

  /** The host's end of its link, on the bridge (what `linkDown` takes down). */
  veth(uid: string): string {
    return `${LINK_PREFIX}${process.pid}h${uid}`;
  }

  address(uid: string): string {
    return `${this.subnet}.${10 + this.uids.indexOf(uid)}`;
  }

  hostname(uid: string): string {
    return `host-${uid}`;
  }

  /** The host's root file system, as the control plane's side sees it. */
  disk(uid: string): string {
    return path.join(this.dir, 'hosts', uid);
  }

  /** Where an absolute path of host `uid` is, seen from the control plane's side. */
  hostPath(uid: string, inside: string): string {
    if (!inside.startsWith('/')) throw new Error(`fleet: '${inside}' is not an absolute path`);
    return path.join(this.disk(uid), inside);
  }

  /** A file of host `uid`, read from the control plane's side (undefined when absent). */
  readHostFile(uid: string, inside: string): Buffer | undefined {
    const file = this.hostPath(uid, inside);
    return existsSync(file) ? readFileSync(file) : undefined;
  }

  private addHost(uid: string, index: number): void {
    const ns = this.netns(uid);
    const peer = `${LINK_PREFIX}${process.pid}p${uid}`;
    run('ip', ['netns', 'add', ns]);
    run('ip', ['link', 'add', this.veth(uid), 'type', 'veth', 'peer', 'name', peer]);
    run('ip', ['link', 'set', peer, 'netns', ns]);
    run('ip', ['link', 'set', this.veth(uid), 'master', this.bridge]);
    run('ip', ['link', 'set', this.veth(uid), 'up']);
    run('ip', ['-n', ns, 'link', 'set', peer, 'name', 'eth0']);
    run('ip', ['-n', ns, 'addr', 'add', `${this.subnet}.${10 + index}/24`, 'dev', 'eth0']);
    run('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
    run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    // The host's disk: a copy of the machine's /etc (its own to change), and empty /root, /tmp,
    // /var, /srv, /opt, /run. /usr comes read-only from the machine (enter-host.sh).
    const disk = this.disk(uid);
    mkdirSync(disk, { recursive: true, mode: 0o755 });
    cpSync('/etc', path.join(disk, 'etc'), { recursive: true, verbatimSymlinks: true });
    for (const d of ['root', 'tmp', 'var/tmp', 'var/lib', 'var/log', 'srv', 'opt', 'run', 'etc/granule'])
      mkdirSync(path.join(disk, d), { recursive: true });
    // The directories the packages of the shared /usr made under /var when they were installed
    // (Debian's puppet, run as root, keeps its ssl and public folders there), as a host that has
    // them installed has them: the folders only, nothing in them.
    for (const d of PACKAGE_VAR_DIRS) copyDirectoryTree(d, path.join(disk, d));
    chmodSync(path.join(disk, 'tmp'), 0o1777);
    chmodSync(path.join(disk, 'var/tmp'), 0o1777);
    chmodSync(path.join(disk, 'root'), 0o700);
    rmSync(path.join(disk, 'etc/hostname'), { force: true });
    writeFileSync(path.join(disk, 'etc/hostname'), `${this.hostname(uid)}\n`);
  }

  /** The command line that enters host `uid` and runs `command` there, as PID 1 of its own PID namespace. */
  private enter(uid: string, command: string[], binds: HostBind[] = []): string[] {
    return [
      'netns',
      'exec',
      this.netns(uid),
      'unshare',
      '--mount',
      '--uts',
      '--ipc',
      '--pid',
      '--fork',
      // When the test kills the unshare (it ignores SIGTERM), the host's PID 1 and so every
      // process of the host goes too.
      '--kill-child=SIGKILL',
      '/bin/sh',
      ENTER_HOST,
      this.disk(uid),
      this.hostname(uid),
      ...binds.flatMap((b) => ['--ro', b.source, b.target]),
      '--',
      ...command,
    ];
  }

  /** The environment a host's processes start with: nothing of the control plane's. */
  private hostEnv(extra: Record<string, string> = {}): Record<string, string> {
    return { PATH: HOST_PATH, HOME: '/root', LANG: 'C.UTF-8', ...extra };
  }

  /**
   * For `E2eStack.start({agentLauncher})`: starts node `uid`'s agent inside its host, with its
   * credential copied to the host's /etc/granule and an environment of NATS settings only.
   */
  readonly launcher = (request: AgentLaunchRequest): ProcessLaunch => {
    if (!this.uids.includes(request.uid))
      throw new Error(`fleet: no host for node ${request.uid} (hosts: ${this.uids.join(', ')})`);
    const agent = (this.options.install?.(request.uid) ?? agentFromDist).install(this, request);
    const env: Record<string, string> = {
      GRANULE_NATS_URL: request.natsUrl,
      GRANULE_SUBJECT_PREFIX: request.subjectPrefix,
      GRANULE_NODE_UID: request.uid,
      GRANULE_ROOT: HOST_AGENT_ROOT,
      GRANULE_HEARTBEAT_SECONDS: String(request.heartbeatSeconds),
      GRANULE_HEALTH_PORT: '0',
    };
    if (request.credsFile) {
      const creds = this.hostPath(request.uid, HOST_AGENT_CREDS);
      copyFileSync(request.credsFile, creds);
      chmodSync(creds, 0o600);
      env.GRANULE_NATS_CREDS = HOST_AGENT_CREDS;
    }
    return {
      command: 'ip',
      args: this.enter(request.uid, agent.command, agent.binds),
      env: this.hostEnv(env),
      // ip execs unshare; unshare's one child is the host's PID 1, which execs the agent.
      // (Undefined when unshare is gone or has not forked yet: the stack then kills unshare itself.)
      signalTarget: (pid) => {
        try {
          const first = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ')[0];
          return first ? Number(first) : undefined;
        } catch {
          return undefined;
        }
      },
    };
  };

  /**
   * Runs `script` with /bin/sh inside host `uid` (a fresh entry: its own PID namespace, the same
   * disk and network), with `binds` of the control plane's files read-only for the time of the
   * script: an agent package to install, say (`AgentInstall`).
   */
  exec(uid: string, script: string, options: { binds?: HostBind[]; timeoutMs?: number } = {}): Promise<HostExecResult> {
    const timeoutMs = options.timeoutMs ?? 30_000;
    return new Promise((resolve, reject) => {
      const child = spawn('ip', this.enter(uid, ['/bin/sh', '-c', script], options.binds), {
        env: this.hostEnv(),
        cwd: '/',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`fleet: '${script}' on host ${uid} did not end within ${timeoutMs} ms\n${stdout}\n${stderr}`));
      }, timeoutMs);
      child.once('error', reject);
      child.once('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  /**
   * The hosts where file `inside` is missing or differs from `expected` byte for byte (empty when
   * every host has it): for files a deploy brings to every host.
   */
  hostsWithout(inside: string, expected: Buffer): string[] {
    return this.uids.filter((uid) => !this.readHostFile(uid, inside)?.equals(expected));
  }

  /** Takes host `uid`'s link down (its end on the bridge): the host is cut off, its processes keep running. */
  linkDown(uid: string): void {
    run('ip', ['link', 'set', this.veth(uid), 'down']);
  }

  linkUp(uid: string): void {
    run('ip', ['link', 'set', this.veth(uid), 'up']);
  }

  /** Kills every process of the hosts and removes the namespaces, links and directories. */
  destroySync(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.reaper.kill('SIGKILL');
    for (const uid of this.uids) killNetnsProcesses(this.netns(uid));
    for (const uid of this.uids) {
      ipQuiet(['link', 'del', this.veth(uid)]);
      ipQuiet(['netns', 'del', this.netns(uid)]);
    }
    ipQuiet(['link', 'del', this.bridge]);
    if (process.env.GRANULE_E2E_KEEP === '1') process.stderr.write(`fleet: kept ${this.dir}\n`);
    else rmSync(this.dir, { recursive: true, force: true });
  }

  /** `destroySync`, then checks nothing is left (throws naming what is). */
  destroy(): Promise<void> {
    this.destroySync();
    const netns = run('ip', ['netns', 'list']);
    const links = run('ip', ['-o', 'link', 'show']);
    const left = [
      ...this.uids.map((u) => this.netns(u)).filter((n) => netns.includes(n)),
      ...[this.bridge, ...this.uids.map((u) => this.veth(u))].filter((l) => links.includes(`: ${l}`)),
    ];
    return left.length > 0 ? Promise.reject(new Error(`fleet teardown left ${left.join(', ')}`)) : Promise.resolve();
  }
}
