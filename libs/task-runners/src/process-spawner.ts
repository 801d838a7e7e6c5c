import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { OutputStream } from './task-runner.types';

/** A command to start: no shell is involved unless `command` is one. */
export interface ProcessSpec {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
}

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
  /** Resolves once the leader exited and its output was drained. */
  readonly exited: Promise<ProcessExit>;
  /** Sends `signal` to every process of the group; false when none is left (0 only probes). */
  signalGroup(signal: NodeJS.Signals | 0): boolean;
  /** True while a process of the group is still running (zombies waiting to be reaped do not count). */
  groupAlive(): boolean;
}

/** Starts processes; the port lets the runner be driven without `child_process`. */
export interface ProcessSpawner {
  spawn(spec: ProcessSpec, onData: (stream: OutputStream, data: Buffer) => void): SpawnedProcess;
}

/**
 * How long output is still read after the leader exited. A background child that inherited the
 * pipes would otherwise keep the task open until it ends; after this it is left running and
 * its further output is dropped.
 */
export const OUTPUT_DRAIN_MS = 1000;

/**
 * Whether any non-zombie process belongs to process group `pgid`. On Linux /proc is read, since
 * `kill(-pgid, 0)` also succeeds for zombies that init has not reaped yet (slow in some containers);
 * elsewhere the kill probe is used.
 */
export function processGroupAlive(pgid: number): boolean {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  }
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // "pid (comm) state ppid pgrp ..."; comm may contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true;
  }
  return false;
}

/** Spawns with `child_process.spawn`, detached, so each task is its own process group. */
export const nodeProcessSpawner: ProcessSpawner = {
  spawn(spec, onData) {
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: spec.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (d: Buffer) => onData('stdout', d));
    child.stderr.on('data', (d: Buffer) => onData('stderr', d));
    const exited = new Promise<ProcessExit>((resolve) => {
      let drainTimer: NodeJS.Timeout | undefined;
      child.once('error', (err) => {
        clearTimeout(drainTimer);
        resolve({ exitCode: null, signal: null, spawnError: err });
      });
      child.once('exit', (code, signal) => {
        drainTimer = setTimeout(() => {
          child.stdout.destroy();
          child.stderr.destroy();
          resolve({ exitCode: code, signal });
        }, OUTPUT_DRAIN_MS);
      });
      child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
        clearTimeout(drainTimer);
        resolve({ exitCode: code, signal });
      });
    });
    return {
      pid: child.pid,
      exited,
      signalGroup(signal) {
        if (child.pid === undefined) return false;
        try {
          process.kill(-child.pid, signal);
          return true;
        } catch {
          return false;
        }
      },
      groupAlive: () => child.pid !== undefined && processGroupAlive(child.pid),
    };
  },
};
