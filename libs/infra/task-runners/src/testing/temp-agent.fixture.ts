import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { runTask } from '../task-runner';
import type { OutputChunk, RunnerContext, TaskExecution, TaskOutcome } from '../task-runner.types';

/** A throw-away agent root: `<tmp>/root` is the root dir, `<tmp>/root/allowed` the only allowed root. */
export interface TempAgent {
  base: string;
  rootDir: string;
  allowed: string;
  ctx: RunnerContext;
  /** Runs a task and collects its chunks. */
  run(
    type: TaskExecution['type'],
    parameters: Record<string, unknown>,
    extra?: Partial<TaskExecution>,
    signal?: AbortSignal,
  ): Promise<{ outcome: TaskOutcome; chunks: OutputChunk[]; stdout: string; stderr: string }>;
  cleanup(): Promise<void>;
}

export async function createTempAgent(ctxOverrides: Partial<RunnerContext> = {}): Promise<TempAgent> {
  const base = await mkdtemp(path.join(tmpdir(), 'granule-runners-'));
  const rootDir = path.join(base, 'root');
  const allowed = path.join(rootDir, 'allowed');
  await mkdir(allowed, { recursive: true });
  const ctx: RunnerContext = { rootDir, allowedRoots: [allowed], killGraceMs: 500, ...ctxOverrides };
  let seq = 0;
  return {
    base,
    rootDir,
    allowed,
    ctx,
    async run(type, parameters, extra = {}, signal) {
      const chunks: OutputChunk[] = [];
      const exec: TaskExecution = {
        runId: 'run-1',
        taskId: `task-${++seq}`,
        nodeUid: 'node-1',
        type,
        parameters,
        ...extra,
      };
      const outcome = await runTask(exec, ctx, (c) => chunks.push(c), signal);
      const join = (s: string): string =>
        chunks
          .filter((c) => c.stream === s)
          .map((c) => c.data)
          .join('');
      return { outcome, chunks, stdout: join('stdout'), stderr: join('stderr') };
    },
    cleanup: () => rm(base, { recursive: true, force: true }),
  };
}

/**
 * True while the process runs: `kill -0` succeeds and it is not a zombie. (A killed orphan stays a
 * zombie until init reaps it, which some container inits do late; a zombie runs nothing.)
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z';
  } catch {
    return false;
  }
}
