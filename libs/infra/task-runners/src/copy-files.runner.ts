import * as path from 'node:path';
import { readFile } from 'node:fs/promises';
import { copyFileAtomic } from './atomic-file';
import { checked, compareFile } from './check-mode';
import { resolveUnderRoots } from './path-guard';
import { cancelled, failedWith, finished, type AttemptState } from './attempt-state';
import { formatMode, ParameterReader } from './task-parameters';
import { TaskIoError, TaskRunnerError } from './task-runner.errors';
import { DEFAULT_DIR_MODE, DEFAULT_FILE_MODE, type TaskOutcome } from './task-runner.types';
import { assertNotDirectory } from './upload-file.runner';

interface PlannedCopy {
  src: string;
  dst: string;
  /** Resolved destination, inside the allowed roots. */
  target: string;
  mode: number;
}

/**
 * copy_files: copies each `files[i].src` (relative to the root dir) to `files[i].dst` (inside the
 * allowed roots), atomically per file, in order. Every entry is checked before the first copy;
 * a copy that fails stops the task and the error names the file (earlier copies stay).
 * Modes: `files[i].permissions`, else task `permissions`, else 0644; new directories `dir_permissions`.
 */
export async function runCopyFilesTask(state: AttemptState): Promise<TaskOutcome> {
  const p = new ParameterReader('copy_files', state.exec.parameters);
  const defaultMode = p.mode('permissions', DEFAULT_FILE_MODE);
  const dirMode = p.mode('dir_permissions', DEFAULT_DIR_MODE);
  const files = p.raw('files');
  const entries: { src: string; dst: string; mode: number }[] = [];
  if (!Array.isArray(files) || files.length === 0) {
    p.problem('parameters.files: expected a non-empty list of {src, dst, permissions?}');
  } else {
    files.forEach((entry, i) => {
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
        p.problem(`parameters.files[${i}]: expected {src, dst, permissions?}`);
        return;
      }
      const f = p.nested(`files[${i}]`, entry as Record<string, unknown>);
      entries.push({
        src: f.requiredString('src'),
        dst: f.requiredString('dst'),
        mode: f.mode('permissions', defaultMode),
      });
    });
  }
  p.check();

  const plan: PlannedCopy[] = [];
  const refused: TaskRunnerError[] = [];
  for (const [i, e] of entries.entries()) {
    try {
      const target = await resolveUnderRoots(`copy_files files[${i}].dst`, e.dst, state.rootDir, state.allowedRoots);
      await assertNotDirectory(`copy_files files[${i}].dst`, target);
      plan.push({ src: path.resolve(state.rootDir, e.src), dst: e.dst, target, mode: e.mode });
    } catch (err) {
      if (!(err instanceof TaskRunnerError)) throw err;
      refused.push(err);
    }
  }
  // Every refused destination is reported, and nothing is copied.
  if (refused.length === 1) throw refused[0];
  if (refused.length > 1) throw new TaskRunnerError(refused[0].code, refused.map((e) => e.message).join('\n'));

  if (state.exec.check) return checkCopies(state, plan);
  for (const [i, c] of plan.entries()) {
    if (state.signal?.aborted) return cancelled(state, 1);
    const what = `${c.src} -> ${c.target} (mode ${formatMode(c.mode)})`;
    if (state.exec.noop) {
      state.output.write('stdout', `would copy ${what}\n`);
      continue;
    }
    try {
      await copyFileAtomic(c.src, c.target, c.mode, dirMode);
    } catch (err) {
      const message = `copy_files file ${i + 1} of ${plan.length} ('${c.src}' -> '${c.dst}') failed: ${(err as Error).message}`;
      return failedWith(state, new TaskIoError(message, { cause: err }), 1);
    }
    state.output.write('stdout', `copied ${what}\n`);
  }
  return finished(state, { status: 'succeeded', exitCode: 0, attempts: state.exec.noop ? 0 : 1 });
}

/** Check mode: compares each destination with its source, reads only (ADR 0031). */
async function checkCopies(state: AttemptState, plan: PlannedCopy[]): Promise<TaskOutcome> {
  const summaries: string[] = [];
  let diff = '';
  let changed = 0;
  for (const [i, c] of plan.entries()) {
    if (state.signal?.aborted) return cancelled(state, 0);
    let source: Buffer;
    try {
      source = await readFile(c.src);
    } catch (err) {
      const message = `copy_files file ${i + 1} of ${plan.length}: cannot read '${c.src}': ${(err as Error).message}`;
      return failedWith(state, new TaskIoError(message, { cause: err }), 0);
    }
    const r = await compareFile(c.target, source, c.mode);
    state.output.write('stdout', `${r.summary}\n`);
    if (!r.changed) continue;
    changed++;
    summaries.push(r.summary);
    diff += r.diff;
  }
  return changed === 0
    ? checked(state, 'no_change', `${plan.length} file${plan.length === 1 ? '' : 's'} as wanted`)
    : checked(state, 'would_change', `${changed} of ${plan.length} files: ${summaries.join('; ')}`, diff);
}
