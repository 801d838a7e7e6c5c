import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { startFailure, type LaunchPlan } from './launch-plan';
import type { OutputStream } from './task-runner.types';

/** How the leader process ended. */
export interface ProcessExit {
  exitCode: number | null;
  signal: string | null;
  /** Set when the process could not be started at all (missing binary, bad cwd). */
  spawnError?: Error;
}

/** A started process that leads its own process group. */
export interface SpawnedProcess {
  readonly pid: number | undefined;
  /** The leader's start time (`processStartTime`), read right after the start; absent off Linux or in fakes. */
  readonly startTime?: number;
  /** Resolves once the leader exited and its output was drained. */
  readonly exited: Promise<ProcessExit>;
  /** Sends `signal` to every process of the group; false when none is left (0 only probes). */
  signalGroup(signal: NodeJS.Signals | 0): boolean;
  /** True while a process of the group is still running (zombies waiting to be reaped do not count). */
  groupAlive(): boolean;
}

/**
 * Executes a `LaunchPlan` and decides nothing of its own; the port lets the runner be driven
 * without `child_process`. Resolves once the process runs, or with `pid` undefined and `exited`
 * carrying `spawnError` when it could not start.
 */
export interface ProcessSpawner {
  spawn(plan: LaunchPlan, onData: (stream: OutputStream, data: Buffer) => void): Promise<SpawnedProcess>;
}

/** A process that never started; `exited` carries why. */
export function notStarted(exited: Promise<ProcessExit>): SpawnedProcess {
  return { pid: undefined, exited, signalGroup: () => false, groupAlive: () => false };
}

/** `spawn`'s answer when the process cannot be started at all. */
export function refused(why: Error): Promise<SpawnedProcess> {
  return Promise.resolve(notStarted(Promise.resolve({ exitCode: null, signal: null, spawnError: why })));
}

/** What `/proc/<pid>/stat` says about a process. */
export interface ProcStat {
  pid: number;
  /** One letter: R running, S sleeping, Z zombie, ... */
  state: string;
  pgid: number;
  /** Field 22: clock ticks after boot. */
  startTime: number;
}

function readProcStat(pid: number): ProcStat | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // exited, or no /proc
  }
  // "pid (comm) state ppid pgrp ..."; comm may contain spaces and parentheses, so count from the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { pid, state: fields[0], pgid: Number(fields[2]), startTime: Number(fields[19]) };
}

/** Pids of every process, or undefined where there is no /proc. */
function listPids(): number[] | undefined {
  try {
    return readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .map(Number);
  } catch {
    return undefined;
  }
}

/**
 * The processes of group `pgid` that still run (zombies left out), or undefined where there is
 * no /proc.
 */
export function processGroupMembers(pgid: number): ProcStat[] | undefined {
  const pids = listPids();
  if (pids === undefined) return undefined;
  const members: ProcStat[] = [];
  for (const pid of pids) {
    const stat = readProcStat(pid);
    if (stat && stat.pgid === pgid && stat.state !== 'Z' && stat.state !== 'X') members.push(stat);
  }
  return members;
}

/**
 * Whether any non-zombie process belongs to process group `pgid`. On Linux /proc is read, since
 * `kill(-pgid, 0)` also succeeds for zombies that init has not reaped yet (slow in some containers);
 * elsewhere the kill probe is used.
 */
export function processGroupAlive(pgid: number): boolean {
  const members = processGroupMembers(pgid);
  if (members !== undefined) return members.length > 0;
  return signalProcessGroup(pgid, 0);
}

/** Sends `signal` to every process of group `pgid`; false when none could be signalled (0 only probes). */
export function signalProcessGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * Start time of process `pid`: field 22 of `/proc/<pid>/stat`, in clock ticks after boot.
 * Together with the boot id it tells a process apart from a later one that got the same pid.
 * Undefined when the process does not exist or there is no /proc.
 */
export function processStartTime(pid: number): number | undefined {
  return readProcStat(pid)?.startTime;
}

let bootId: string | undefined | null = null;

/** `/proc/sys/kernel/random/boot_id`: changes on every boot; undefined where it cannot be read. */
export function currentBootId(): string | undefined {
  if (bootId === null) {
    try {
      bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      bootId = undefined;
    }
  }
  return bootId;
}

/** The value of each of `names` in the environment process `pid` started with (empty when unreadable). */
export function processEnvironment(pid: number, names: readonly string[]): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/environ`, 'utf8');
  } catch {
    return {}; // gone, or another user's process
  }
  const found: Record<string, string> = {};
  for (const entry of text.split('\0')) {
    const eq = entry.indexOf('=');
    const name = entry.slice(0, eq);
    if (eq > 0 && names.includes(name) && !(name in found)) found[name] = entry.slice(eq + 1);
  }
  return found;
}

/** The errno name Node.js gives a failed spawn (`ENOENT`, ...). */
function errnoName(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : 'EUNKNOWN';
}

/**
 * Executes a plan with `child_process.spawn` from this process: the fallback where the native
 * helper is not built. `detached` is Node.js's word for setsid.
 */
export const nodeProcessSpawner: ProcessSpawner = {
  async spawn(plan, onData) {
    let child: ChildProcessByStdio<null, Readable, Readable>;
    try {
      child = spawn(plan.file, plan.argv.slice(1), {
        argv0: plan.argv[0],
        cwd: plan.cwd,
        env: plan.env,
        detached: plan.newSession,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (err) {
      return refused(startFailure(plan.file, errnoName(err), err)); // e.g. EMFILE, thrown rather than emitted
    }
    child.stdout.on('data', (d: Buffer) => onData('stdout', d));
    child.stderr.on('data', (d: Buffer) => onData('stderr', d));
    const exited = new Promise<ProcessExit>((resolve) => {
      let drainTimer: NodeJS.Timeout | undefined;
      child.once('error', (err) => {
        clearTimeout(drainTimer);
        resolve({ exitCode: null, signal: null, spawnError: startFailure(plan.file, errnoName(err), err) });
      });
      child.once('exit', (code, signal) => {
        drainTimer = setTimeout(() => {
          child.stdout.destroy();
          child.stderr.destroy();
          resolve({ exitCode: code, signal });
        }, plan.drainMs);
      });
      child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
        clearTimeout(drainTimer);
        resolve({ exitCode: code, signal });
      });
    });
    if (child.pid === undefined) return notStarted(exited);
    const pid = child.pid;
    // The fork happened inside spawn(), so the leader (or its zombie) is there to be read.
    const startTime = processStartTime(pid);
    return {
      pid,
      ...(startTime === undefined ? {} : { startTime }),
      exited,
      signalGroup: (signal) => signalProcessGroup(pid, signal),
      groupAlive: () => processGroupAlive(pid),
    };
  },
};
