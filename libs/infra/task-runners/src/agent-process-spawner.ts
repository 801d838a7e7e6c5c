import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { accessSync, constants as fsConstants } from 'node:fs';
import * as path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { systemClock } from './clock';
import { startFailure, type LaunchPlan } from './launch-plan';
import { encodeLaunchRequest, frameDecoder, type HelperMessage } from './native-helper.protocol';
import {
  nodeProcessSpawner,
  notStarted,
  processGroupAlive,
  refused,
  signalProcessGroup,
  type ProcessExit,
  type ProcessSpawner,
  type SpawnedProcess,
} from './process-spawner';
import { waitForGroupGone } from './run-process';
import type { OutputStream } from './task-runner.types';

/**
 * The native helper (`native/granule-spawn.c`), as `tools/build-native.mjs` builds it: under
 * `libs/infra/task-runners/native/build/` for the sources and in the same place under dist/.
 */
export const NATIVE_SPAWN_HELPER = path.join(__dirname, '..', 'native', 'build', 'granule-spawn');

/**
 * What starts task processes: `native`, the helper `granule-spawn`; `node`, Node.js's
 * `child_process` in the agent itself; `auto`, the native helper when it is built.
 */
export const SPAWN_HELPER_CHOICES = ['auto', 'native', 'node'] as const;
export type SpawnHelperChoice = (typeof SPAWN_HELPER_CHOICES)[number];

export interface AgentProcessSpawnerOptions {
  /** Default `auto`. `native` fails every spawn when the binary is missing (see `helperKind`). */
  helper?: SpawnHelperChoice;
  /** Path of the native helper binary (default `NATIVE_SPAWN_HELPER`). */
  nativeBinary?: string;
}

/** A running native helper. */
interface Helper {
  readonly process: ChildProcessByStdio<Writable, Readable, null>;
  /** True until it exits or is let go. */
  open: boolean;
  ready: boolean;
}

interface InFlight {
  /** The helper the task was handed to. */
  helper: Helper;
  plan: LaunchPlan;
  onData: (stream: OutputStream, data: Buffer) => void;
  exited: Promise<ProcessExit>;
  resolveExit: (exit: ProcessExit) => void;
  resolveSpawned: (process: SpawnedProcess) => void;
  announced: boolean;
  lost: boolean;
  pid?: number;
}

/**
 * Starts the agent's task processes. A fork costs in proportion to the forking process's memory
 * and the agent's is over a hundred MB, so where the native helper `granule-spawn` (about 1 MB,
 * ADR 0009) is built, it forks instead: started on first use and again after it dies, it
 * executes each `LaunchPlan` it is handed and reports output and exits. Where it is not built,
 * `nodeProcessSpawner` forks from the agent. The plan is the same either way; signals and
 * liveness checks go straight to the process group.
 *
 * Should the helper die while tasks run, their groups are killed (nobody would see them end)
 * and each task ends killed by SIGKILL with a note in its output.
 */
export class AgentProcessSpawner implements ProcessSpawner {
  private kind: 'native' | 'node' | 'missing';
  private readonly choice: SpawnHelperChoice;
  private readonly nativeBinary: string;
  private helper?: Helper;
  private readonly inFlight = new Map<number, InFlight>();
  private nextId = 1;
  private closed = false;
  private readonly startWaiters = new Set<{ helper: Helper; ready: () => void; failed: (err: Error) => void }>();
  private readonly gone = new WeakSet<Helper>();

  constructor(options: AgentProcessSpawnerOptions = {}) {
    this.nativeBinary = options.nativeBinary ?? NATIVE_SPAWN_HELPER;
    this.choice = options.helper ?? 'auto';
    const built = this.choice !== 'node' && isExecutable(this.nativeBinary);
    this.kind = this.choice === 'node' ? 'node' : built ? 'native' : this.choice === 'native' ? 'missing' : 'node';
  }

  /**
   * What starts the processes: `native` or `node`, or `missing` when `native` was asked for and
   * is not built. With `auto`, a native helper that cannot be started (a binary for another
   * architecture, say) gives way to `node` for good.
   */
  get helperKind(): 'native' | 'node' | 'missing' {
    return this.kind;
  }

  spawn(plan: LaunchPlan, onData: (stream: OutputStream, data: Buffer) => void): Promise<SpawnedProcess> {
    if (this.closed) return refused(new Error('the spawn helper is closed'));
    if (this.kind === 'missing') return refused(new Error(`the native spawn helper ${this.nativeBinary} is not built`));
    if (this.kind === 'node') return nodeProcessSpawner.spawn(plan, onData);
    const helper = this.runningHelper();
    const id = this.nextId++;
    return new Promise<SpawnedProcess>((resolveSpawned) => {
      let resolveExit!: (exit: ProcessExit) => void;
      const exited = new Promise<ProcessExit>((r) => (resolveExit = r));
      this.inFlight.set(id, {
        helper,
        plan,
        onData,
        exited,
        resolveExit,
        resolveSpawned,
        announced: false,
        lost: false,
      });
      helper.process.stdin.write(encodeLaunchRequest(id, plan), (err) => {
        if (err) this.lose(id, err);
      });
    });
  }

  /**
   * Starts the native helper now and resolves once it is ready, so the first task does not wait
   * for it to boot. Rejects when it cannot be started (unless `auto` falls back to `node`).
   */
  start(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the spawn helper is closed'));
    if (this.kind === 'missing')
      return Promise.reject(
        new Error(
          `the native spawn helper ${this.nativeBinary} is not built (npm run build builds it; it needs a C compiler)`,
        ),
      );
    if (this.kind === 'node') return Promise.resolve();
    const helper = this.runningHelper();
    if (helper.ready) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        helper,
        ready: () => {
          this.startWaiters.delete(waiter);
          resolve();
        },
        failed: (err: Error) => {
          this.startWaiters.delete(waiter);
          if (this.kind === 'node' && !this.closed)
            resolve(); // `auto` fell back
          else reject(err);
        },
      };
      this.startWaiters.add(waiter);
    });
  }

  /** Pid of the running native helper, if one runs (for logs and tests). */
  get helperPid(): number | undefined {
    return this.helper?.open ? this.helper.process.pid : undefined;
  }

  /** Lets the helper go (it exits when its input closes); later spawns fail. */
  close(): void {
    this.closed = true;
    if (this.helper) {
      this.helper.open = false;
      this.helper.process.stdin.end();
    }
    this.helper = undefined;
  }

  private runningHelper(): Helper {
    if (this.helper?.open) return this.helper;
    const child = spawn(this.nativeBinary, [], { stdio: ['pipe', 'pipe', 'inherit'] });
    const helper: Helper = { process: child, open: true, ready: false };
    this.helper = helper;
    child.once('exit', () => (helper.open = false));
    child.stdin.on('error', () => undefined); // EPIPE once it died: 'close' settles the tasks
    child.stdout.on(
      'data',
      frameDecoder((m) => this.onMessage(helper, m)),
    );
    // 'close': after the process ended and its output was read, so no report is left behind.
    child.once('close', (code, signal) =>
      this.helperGone(helper, new Error(`the spawn helper process exited (${signal ?? `code ${code}`})`)),
    );
    child.on('error', (err) => {
      // Not started at all (no 'exit' or 'close' follows); otherwise 'close' settles the tasks.
      if (child.pid !== undefined) return;
      if (this.choice === 'auto') this.kind = 'node';
      this.helperGone(helper, new Error(`the spawn helper could not be started: ${err.message}`));
    });
    return helper;
  }

  /** The helper ended or never started: tasks in its hands are lost, waiters for it fail. */
  private helperGone(helper: Helper, why: Error): void {
    if (this.gone.has(helper)) return;
    this.gone.add(helper);
    helper.open = false;
    if (this.helper === helper) this.helper = undefined;
    for (const [id, entry] of [...this.inFlight]) if (entry.helper === helper) this.lose(id, why);
    for (const waiter of [...this.startWaiters]) if (waiter.helper === helper) waiter.failed(why);
  }

  private onMessage(helper: Helper, m: HelperMessage): void {
    if (m.t === 'ready') {
      helper.ready = true;
      for (const waiter of [...this.startWaiters]) if (waiter.helper === helper) waiter.ready();
      return;
    }
    const entry = this.inFlight.get(m.id);
    if (!entry || entry.lost) return;
    if (m.t === 'out') {
      entry.onData(m.stream, m.data);
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
    } else {
      this.settle(
        m.id,
        m.startError === undefined
          ? { exitCode: m.code, signal: m.signal }
          : { exitCode: null, signal: null, spawnError: startFailure(entry.plan.file, m.startError) },
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
    // The kill at once (no grace: nobody would see the task end), then wait for the group to go.
    const group = {
      signalGroup: (signal: NodeJS.Signals | 0) => signalProcessGroup(pid, signal),
      groupAlive: () => processGroupAlive(pid),
    };
    const stop = { ...entry.plan.stop, graceMs: 0 };
    void waitForGroupGone(group, systemClock.now(), stop, systemClock).then(() =>
      this.settle(id, { exitCode: null, signal: stop.killSignal }),
    );
  }
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}
