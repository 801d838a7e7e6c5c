import { fork, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { systemClock } from './clock';
import { processGroupAlive, signalProcessGroup, type ProcessExit, type ProcessSpawner, type ProcessSpec, type SpawnedProcess } from './process-spawner';
import { waitForGroupGone } from './run-process';
import type { OutputStream } from './task-runner.types';

/** The helper script, beside this file in the sources and in dist/. */
export const SPAWN_HELPER_SCRIPT = path.join(__dirname, 'spawn-helper.cjs');

type HelperMessage =
  | { t: 'ready' }
  | { t: 'spawned'; id: number; pid: number; startTime?: number }
  | { t: 'out'; id: number; stream: OutputStream; data: Uint8Array }
  | { t: 'exit'; id: number; code: number | null; signal: string | null; error?: { message: string; code?: string } };

interface InFlight {
  onData: (stream: OutputStream, data: Buffer) => void;
  exited: Promise<ProcessExit>;
  resolveExit: (exit: ProcessExit) => void;
  resolveSpawned: (process: SpawnedProcess) => void;
  announced: boolean;
  lost: boolean;
  pid?: number;
}

/**
 * Starts task processes through a small helper process (`spawn-helper.cjs`, forked on first use
 * and again after it dies) instead of forking the agent itself: a fork costs in proportion to
 * the parent's memory, and the agent's is several times the helper's. Processes are the same
 * as `nodeProcessSpawner`'s (detached, each its own group, stdout and stderr piped); their
 * output comes over IPC. Signals and liveness checks go straight to the process group.
 *
 * Should the helper die while tasks run, their groups are killed (nobody would see them end)
 * and each task ends killed by SIGKILL with a note in its output.
 */
export class HelperProcessSpawner implements ProcessSpawner {
  private helper?: ChildProcess;
  private readonly inFlight = new Map<number, InFlight>();
  private nextId = 1;
  private closed = false;
  private readonly ready = new WeakSet<ChildProcess>();

  constructor(private readonly script: string = SPAWN_HELPER_SCRIPT) {}

  spawn(spec: ProcessSpec, onData: (stream: OutputStream, data: Buffer) => void): Promise<SpawnedProcess> {
    if (this.closed) return Promise.resolve(notStarted(Promise.resolve({ exitCode: null, signal: null, spawnError: new Error('the spawn helper is closed') })));
    const helper = this.helperProcess();
    const id = this.nextId++;
    return new Promise<SpawnedProcess>((resolveSpawned) => {
      let resolveExit!: (exit: ProcessExit) => void;
      const exited = new Promise<ProcessExit>((r) => (resolveExit = r));
      this.inFlight.set(id, { onData, exited, resolveExit, resolveSpawned, announced: false, lost: false });
      helper.send({ t: 'spawn', id, command: spec.command, args: spec.args, cwd: spec.cwd, env: spec.env }, (err) => {
        if (err) this.lose(id, err);
      });
    });
  }

  /**
   * Starts the helper now and resolves once it is ready, so the first task does not wait for a
   * Node.js process to boot. Rejects when it cannot be started.
   */
  start(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the spawn helper is closed'));
    const helper = this.helperProcess();
    if (this.ready.has(helper)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onMessage = (m: HelperMessage): void => {
        if (m.t !== 'ready') return;
        helper.off('exit', onExit);
        helper.off('message', onMessage);
        resolve();
      };
      const onExit = (code: number | null, signal: string | null): void => {
        helper.off('message', onMessage);
        reject(new Error(`the spawn helper process exited at start (${signal ?? `code ${code}`})`));
      };
      helper.on('message', onMessage);
      helper.once('exit', onExit);
    });
  }

  /** Pid of the running helper process, if one runs (for logs and tests). */
  get helperPid(): number | undefined {
    return this.helper?.connected ? this.helper.pid : undefined;
  }

  /** Lets the helper go (it exits when its IPC channel closes); later spawns fail. */
  close(): void {
    this.closed = true;
    this.helper?.disconnect();
    this.helper = undefined;
  }

  private helperProcess(): ChildProcess {
    if (this.helper && this.helper.connected) return this.helper;
    const helper = fork(this.script, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [] });
    this.helper = helper;
    helper.on('message', (m: HelperMessage) => this.onMessage(helper, m));
    helper.once('exit', (code, signal) => {
      if (this.helper === helper) this.helper = undefined;
      const why = new Error(`the spawn helper process exited (${signal ?? `code ${code}`})`);
      for (const id of [...this.inFlight.keys()]) this.lose(id, why);
    });
    helper.on('error', () => undefined); // 'exit' follows and settles the tasks
    return helper;
  }

  private onMessage(helper: ChildProcess, m: HelperMessage): void {
    if (m.t === 'ready') {
      this.ready.add(helper);
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
      const spawnError = m.error ? Object.assign(new Error(m.error.message), m.error.code ? { code: m.error.code } : {}) : undefined;
      this.settle(m.id, spawnError ? { exitCode: null, signal: null, spawnError } : { exitCode: m.code, signal: m.signal });
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
    const group = { signalGroup: (signal: NodeJS.Signals | 0) => signalProcessGroup(pid, signal), groupAlive: () => processGroupAlive(pid) };
    void waitForGroupGone(group, systemClock.now(), { clock: systemClock, killGraceMs: 0 }).then(() => this.settle(id, { exitCode: null, signal: 'SIGKILL' }));
  }
}

/** A process that never started; `exited` carries why. */
function notStarted(exited: Promise<ProcessExit>): SpawnedProcess {
  return { pid: undefined, exited, signalGroup: () => false, groupAlive: () => false };
}
