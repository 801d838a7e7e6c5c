import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { waitUntil } from '@granule/messaging';

/** Repository root (this file is apps/node-agent/src/testing/). */
export const REPO_ROOT = path.resolve(__dirname, '../../../..');
export const AGENT_MAIN = path.join(REPO_ROOT, 'dist/apps/node-agent/src/main.js');

/** Builds dist/ when it is missing or a source under apps/ or libs/ is newer than the last build (tools/ensure-built.sh, as ./granule does). */
export function buildIfStale(): void {
  execFileSync('bash', [path.join(REPO_ROOT, 'tools/ensure-built.sh')], { cwd: REPO_ROOT, stdio: 'inherit' });
}

/** One JSON log line of the agent. */
export type AgentLogLine = Record<string, unknown> & { msg?: string; level?: string };

/** A node-agent running as a child process, with its log lines collected. */
export class AgentProcess {
  readonly lines: AgentLogLine[] = [];
  stderr = '';
  private child?: ChildProcess;
  private exited?: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(readonly env: Record<string, string>) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the agent and waits for its "node-agent started" line. */
  async start(timeoutMs = 15_000): Promise<void> {
    this.lines.length = 0;
    this.stderr = '';
    const child = spawn(process.execPath, [AGENT_MAIN], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    let buffer = '';
    child.stdout?.setEncoding('utf8').on('data', (data: string) => {
      buffer += data;
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        try {
          this.lines.push(JSON.parse(line) as AgentLogLine);
        } catch {
          this.lines.push({ msg: line });
        }
      }
    });
    child.stderr?.setEncoding('utf8').on('data', (data: string) => (this.stderr += data));
    await waitUntil(
      () => this.lines.some((l) => l.msg === 'node-agent started') || child.exitCode !== null,
      'the agent to start',
      timeoutMs,
    );
    if (child.exitCode !== null) throw new Error(`the agent exited with ${child.exitCode}: ${this.stderr}`);
  }

  /** Sends `signal` and waits for the exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (!this.child || !this.exited) throw new Error('the agent was not started');
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    const result = await this.exited;
    this.child = undefined;
    return result;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }
}

/** Runs the agent once to completion (for start-up failures). */
export function runAgentOnce(
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [AGENT_MAIN], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** True while process `pid` runs: `kill -0` succeeds and it is not a zombie (an orphan may wait long for init to reap it). */
export function processRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Sends SIGKILL to process group `pgid` if anything of it is left (test clean-up). */
export function killGroupQuietly(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // already gone
  }
}
