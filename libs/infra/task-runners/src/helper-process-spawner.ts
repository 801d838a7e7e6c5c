import { fork, spawn as spawnChild, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants } from 'node:fs';
import { constants as osConstants } from 'node:os';
import * as path from 'node:path';
import { systemClock } from './clock';
import {
  processGroupAlive,
  signalProcessGroup,
  type ProcessExit,
  type ProcessSpawner,
  type ProcessSpec,
  type SpawnedProcess,
} from './process-spawner';
import { waitForGroupGone } from './run-process';
import type { OutputStream } from './task-runner.types';

/** The Node.js helper script, beside this file in the sources and in dist/. */
export const SPAWN_HELPER_SCRIPT = path.join(__dirname, 'spawn-helper.cjs');

/**
 * The native helper (`native/granule-spawn.c`), as `tools/build-native.mjs` builds it: under
 * `libs/infra/task-runners/native/build/` for the sources and in the same place under dist/.
 */
export const NATIVE_SPAWN_HELPER = path.join(__dirname, '..', 'native', 'build', 'granule-spawn');

/** Which helper starts the task processes; `auto` takes the native one when it is built. */
export const SPAWN_HELPER_CHOICES = ['auto', 'native', 'node'] as const;
export type SpawnHelperChoice = (typeof SPAWN_HELPER_CHOICES)[number];

export interface HelperProcessSpawnerOptions {
  /** Default `auto`. `native` fails every spawn when the binary is missing (see `helperKind`). */
  helper?: SpawnHelperChoice;
  /** Path of the native helper binary (default `NATIVE_SPAWN_HELPER`). */
  nativeBinary?: string;
  /** Path of the Node.js helper script (default `SPAWN_HELPER_SCRIPT`). */
  script?: string;
}

export type HelperMessage =
  | { t: 'ready' }
  | { t: 'spawned'; id: number; pid: number; startTime?: number }
  | { t: 'out'; id: number; stream: OutputStream; data: Uint8Array }
  | { t: 'exit'; id: number; code: number | null; signal: string | null; error?: { message: string; code?: string } };

interface SpawnRequest {
  id: number;
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
}

/** A running helper process and how to talk to it. */
interface HelperChannel {
  readonly process: ChildProcess;
  /** True until the helper exits or is let go. */
  readonly connected: boolean;
  send(request: SpawnRequest, done: (err: Error | null) => void): void;
  /** Lets the helper go: it exits when its input closes. */
  close(): void;
}

interface InFlight {
  /** The helper the task was handed to. */
  helper: HelperChannel;
  onData: (stream: OutputStream, data: Buffer) => void;
  exited: Promise<ProcessExit>;
  resolveExit: (exit: ProcessExit) => void;
  resolveSpawned: (process: SpawnedProcess) => void;
  announced: boolean;
  lost: boolean;
  pid?: number;
}

/**
 * Starts task processes through a small helper process instead of forking the agent itself: a
 * fork costs in proportion to the parent's memory, and the agent's is over a hundred MB. The
 * helper is `granule-spawn`, a native program of about 1 MB (ADR 0009), or, where it is not
 * built, `spawn-helper.cjs`, a Node.js process of about 40 MB. It is started on first use and
 * again after it dies. Processes are the same as `nodeProcessSpawner`'s (detached, each its own
 * group, stdout and stderr piped); their output comes through the helper. Signals and liveness
 * checks go straight to the process group.
 *
 * Should the helper die while tasks run, their groups are killed (nobody would see them end)
 * and each task ends killed by SIGKILL with a note in its output.
 */
export class HelperProcessSpawner implements ProcessSpawner {
  private kind: 'native' | 'node' | 'missing';
  private readonly choice: SpawnHelperChoice;
  private helper?: HelperChannel;
  private readonly inFlight = new Map<number, InFlight>();
  private nextId = 1;
  private closed = false;
  private readonly ready = new WeakSet<HelperChannel>();
  private readonly nativeBinary: string;
  private readonly script: string;
  private readonly startWaiters = new Set<{ helper: HelperChannel; ready: () => void; failed: (err: Error) => void }>();
  private readonly gone = new WeakSet<HelperChannel>();

  constructor(options: HelperProcessSpawnerOptions = {}) {
    this.nativeBinary = options.nativeBinary ?? NATIVE_SPAWN_HELPER;
    this.script = options.script ?? SPAWN_HELPER_SCRIPT;
    this.choice = options.helper ?? 'auto';
    const built = this.choice !== 'node' && isExecutable(this.nativeBinary);
    this.kind = this.choice === 'node' ? 'node' : built ? 'native' : this.choice === 'native' ? 'missing' : 'node';
  }

  /**
   * The helper this spawner uses: `native` or `node`, or `missing` when `native` was asked for
   * and is not built. With `auto`, a native helper that cannot be started (a binary for another
   * architecture, say) gives way to the Node.js one for good.
   */
  get helperKind(): 'native' | 'node' | 'missing' {
    return this.kind;
  }

  spawn(spec: ProcessSpec, onData: (stream: OutputStream, data: Buffer) => void): Promise<SpawnedProcess> {
    if (this.closed) return refused('the spawn helper is closed');
    if (this.kind === 'missing') return refused(`the native spawn helper ${this.nativeBinary} is not built`);
    const helper = this.helperChannel();
    const id = this.nextId++;
    return new Promise<SpawnedProcess>((resolveSpawned) => {
      let resolveExit!: (exit: ProcessExit) => void;
      const exited = new Promise<ProcessExit>((r) => (resolveExit = r));
      this.inFlight.set(id, { helper, onData, exited, resolveExit, resolveSpawned, announced: false, lost: false });
      helper.send({ id, command: spec.command, args: spec.args, cwd: spec.cwd, env: spec.env }, (err) => {
        if (err) this.lose(id, err);
      });
    });
  }

  /**
   * Starts the helper now and resolves once it is ready, so the first task does not wait for it
   * to boot. Rejects when it cannot be started.
   */
  start(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the spawn helper is closed'));
    if (this.kind === 'missing')
      return Promise.reject(
        new Error(
          `the native spawn helper ${this.nativeBinary} is not built (npm run build builds it; it needs a C compiler)`,
        ),
      );
    const kind = this.kind;
    const helper = this.helperChannel();
    if (this.ready.has(helper)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        helper,
        ready: () => {
          this.startWaiters.delete(waiter);
          resolve();
        },
        failed: (err: Error) => {
          this.startWaiters.delete(waiter);
          // `auto` fell back to the Node.js helper: start that one instead.
          if (this.kind !== kind && !this.closed) this.start().then(resolve, reject);
          else reject(err);
        },
      };
      this.startWaiters.add(waiter);
    });
  }

  /** Pid of the running helper process, if one runs (for logs and tests). */
  get helperPid(): number | undefined {
    return this.helper?.connected ? this.helper.process.pid : undefined;
  }

  /** Lets the helper go (it exits when its input closes); later spawns fail. */
  close(): void {
    this.closed = true;
    this.helper?.close();
    this.helper = undefined;
  }

  private helperChannel(): HelperChannel {
    if (this.helper && this.helper.connected) return this.helper;
    const onMessage = (m: HelperMessage): void => this.onMessage(helper, m);
    const helper =
      this.kind === 'native' ? openNativeHelper(this.nativeBinary, onMessage) : openNodeHelper(this.script, onMessage);
    this.helper = helper;
    // 'close': after the process ended and its output was read, so no report is left behind.
    helper.process.once('close', (code, signal) =>
      this.helperGone(helper, new Error(`the spawn helper process exited (${signal ?? `code ${code}`})`)),
    );
    helper.process.on('error', (err) => {
      // Not started at all (no 'exit' or 'close' follows); otherwise 'close' settles the tasks.
      if (helper.process.pid !== undefined) return;
      if (this.kind === 'native' && this.choice === 'auto') this.kind = 'node';
      this.helperGone(helper, new Error(`the spawn helper could not be started: ${err.message}`));
    });
    return helper;
  }

  /** The helper ended or never started: tasks in its hands are lost, waiters for it fail. */
  private helperGone(helper: HelperChannel, why: Error): void {
    if (this.gone.has(helper)) return;
    this.gone.add(helper);
    if (this.helper === helper) this.helper = undefined;
    for (const [id, entry] of [...this.inFlight]) if (entry.helper === helper) this.lose(id, why);
    for (const waiter of [...this.startWaiters]) if (waiter.helper === helper) waiter.failed(why);
  }

  private onMessage(helper: HelperChannel, m: HelperMessage): void {
    if (m.t === 'ready') {
      this.ready.add(helper);
      for (const waiter of [...this.startWaiters]) if (waiter.helper === helper) waiter.ready();
      return;
    }
    const entry = this.inFlight.get(m.id);
    if (!entry || entry.lost) return;
    if (m.t === 'out') {
      entry.onData(m.stream, Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength));
    } else if (m.t === 'spawned') {
      const pid = m.pid;
      entry.pid = pid;
      this.announce(entry, {
        pid,
        ...(m.startTime === undefined ? {} : { startTime: m.startTime }),
        exited: entry.exited,
        signalGroup: (signal) => signalProcessGroup(pid, signal),
        groupAlive: () => processGroupAlive(pid),
      });
    } else if (m.t === 'exit') {
      const spawnError = m.error
        ? Object.assign(new Error(m.error.message), m.error.code ? { code: m.error.code } : {})
        : undefined;
      this.settle(
        m.id,
        spawnError ? { exitCode: null, signal: null, spawnError } : { exitCode: m.code, signal: m.signal },
      );
    }
  }

  /** Answers `spawn` once: with the running process, or with one that never started. */
  private announce(entry: InFlight, process: SpawnedProcess): void {
    if (entry.announced) return;
    entry.announced = true;
    entry.resolveSpawned(process);
  }

  private settle(id: number, exit: ProcessExit): void {
    const entry = this.inFlight.get(id);
    if (!entry) return;
    this.inFlight.delete(id);
    entry.resolveExit(exit);
    this.announce(entry, notStarted(entry.exited));
  }

  /** The helper is gone (or unreachable) while task `id` was in its hands. */
  private lose(id: number, why: Error): void {
    const entry = this.inFlight.get(id);
    if (!entry || entry.lost) return;
    entry.lost = true;
    const pid = entry.pid;
    if (pid === undefined) {
      this.settle(id, { exitCode: null, signal: null, spawnError: why });
      return;
    }
    entry.onData('stderr', Buffer.from(`[granule] ${why.message} while the task ran; its process group was killed\n`));
    // SIGKILL at once (no grace: nobody would see the task end), then wait for the group to go.
    const group = {
      signalGroup: (signal: NodeJS.Signals | 0) => signalProcessGroup(pid, signal),
      groupAlive: () => processGroupAlive(pid),
    };
    void waitForGroupGone(group, systemClock.now(), { clock: systemClock, killGraceMs: 0 }).then(() =>
      this.settle(id, { exitCode: null, signal: 'SIGKILL' }),
    );
  }
}

/** A process that never started; `exited` carries why. */
function notStarted(exited: Promise<ProcessExit>): SpawnedProcess {
  return { pid: undefined, exited, signalGroup: () => false, groupAlive: () => false };
}

/** `spawn`'s answer when no helper can take the task. */
function refused(why: string): Promise<SpawnedProcess> {
  return Promise.resolve(notStarted(Promise.resolve({ exitCode: null, signal: null, spawnError: new Error(why) })));
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `spawn-helper.cjs` over Node.js IPC. */
function openNodeHelper(script: string, onMessage: (m: HelperMessage) => void): HelperChannel {
  const child = fork(script, [], {
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [],
  });
  child.on('message', onMessage);
  return {
    process: child,
    get connected() {
      return child.connected;
    },
    send: (request, done) => {
      child.send({ t: 'spawn', ...request }, done);
    },
    close: () => child.disconnect(),
  };
}

/** `granule-spawn` over its stdin and stdout (the frames described in granule-spawn.c). */
function openNativeHelper(binary: string, onMessage: (m: HelperMessage) => void): HelperChannel {
  const child = spawnChild(binary, [], { stdio: ['pipe', 'pipe', 'inherit'] });
  let open = true;
  child.once('exit', () => (open = false));
  child.stdin?.on('error', () => undefined); // EPIPE once it died: 'close' settles the tasks
  const decode = frameDecoder(onMessage);
  child.stdout?.on('data', decode);
  return {
    process: child,
    get connected() {
      return open;
    },
    send: (request, done) => {
      const frame = encodeSpawnRequest(request);
      if (typeof frame === 'string') {
        // What Node.js refuses in spawn(): answered as a start failure of this task alone.
        queueMicrotask(() =>
          onMessage({
            t: 'exit',
            id: request.id,
            code: null,
            signal: null,
            error: { message: frame, code: 'ERR_INVALID_ARG_VALUE' },
          }),
        );
        done(null);
        return;
      }
      child.stdin?.write(frame, (err) => done(err ?? null));
    },
    close: () => {
      open = false;
      child.stdin?.end();
    },
  };
}

/** The 'S' frame of a spawn request, or why it cannot be sent (a NUL byte in a string). */
export function encodeSpawnRequest(request: SpawnRequest): Buffer | string {
  const env = Object.entries(request.env).map(([k, v]) => `${k}=${v}`);
  const strings = [request.command, request.cwd, request.command, ...request.args, ...env];
  const bad = strings.find((s) => s.includes('\0'));
  if (bad !== undefined)
    return `spawn ${request.command}: a command, argument, directory or environment entry contains a NUL byte`;
  const body = Buffer.from(`${strings.join('\0')}\0`, 'utf8');
  const frame = Buffer.allocUnsafe(4 + 1 + 4 + 8 + body.length);
  frame.writeUInt32LE(frame.length - 4, 0);
  frame.write('S', 4, 'latin1');
  frame.writeUInt32LE(request.id, 5);
  frame.writeUInt32LE(1 + request.args.length, 9);
  frame.writeUInt32LE(env.length, 13);
  body.copy(frame, 17);
  return frame;
}

const SIGNAL_NAMES = new Map<number, string>(Object.entries(osConstants.signals).map(([name, n]) => [n, name]));
const UNKNOWN_START_TIME = 0xffffffff;

/** Turns the native helper's output into messages, whatever the chunking. */
export function frameDecoder(onMessage: (m: HelperMessage) => void): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  return (chunk) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    let at = 0;
    while (pending.length - at >= 4) {
      const length = pending.readUInt32LE(at);
      if (pending.length - at - 4 < length) break;
      const type = String.fromCharCode(pending[at + 4]);
      const id = pending.readUInt32LE(at + 5);
      const payload = pending.subarray(at + 9, at + 4 + length);
      at += 4 + length;
      if (type === 'R') onMessage({ t: 'ready' });
      else if (type === 'P') {
        const low = payload.readUInt32LE(4);
        const high = payload.readUInt32LE(8);
        const known = !(low === UNKNOWN_START_TIME && high === UNKNOWN_START_TIME);
        onMessage({
          t: 'spawned',
          id,
          pid: payload.readInt32LE(0),
          ...(known ? { startTime: high * 2 ** 32 + low } : {}),
        });
      } else if (type === 'O' || type === 'E') {
        onMessage({ t: 'out', id, stream: type === 'O' ? 'stdout' : 'stderr', data: Buffer.from(payload) });
      } else if (type === 'X') {
        const code = payload.readInt32LE(0);
        const signal = payload.readInt32LE(4);
        const [errorCode, message] = payload.subarray(8).toString('utf8').split('\0');
        onMessage({
          t: 'exit',
          id,
          code: code < 0 ? null : code,
          signal: signal === 0 ? null : (SIGNAL_NAMES.get(signal) ?? `signal ${signal}`),
          ...(message ? { error: { message, ...(errorCode ? { code: errorCode } : {}) } } : {}),
        });
      }
    }
    pending = at === pending.length ? Buffer.alloc(0) : pending.subarray(at);
  };
}
