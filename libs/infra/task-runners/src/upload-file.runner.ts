import { stat } from 'node:fs/promises';
import { writeFileAtomic } from './atomic-file';
import { checked, compareFile } from './check-mode';
import { resolveUnderRoots } from './path-guard';
import { failedWith, finished, type AttemptState } from './attempt-state';
import { formatMode, ParameterReader } from './task-parameters';
import { TaskIoError } from './task-runner.errors';
import { DEFAULT_DIR_MODE, DEFAULT_FILE_MODE, type TaskOutcome } from './task-runner.types';

/** Refuses to replace a directory with a file. */
export async function assertNotDirectory(what: string, target: string): Promise<void> {
  const info = await stat(target).catch(() => undefined);
  if (info?.isDirectory()) throw new TaskIoError(`${what} '${target}' is a directory`);
}

/**
 * upload_file: writes `data` to `path` (relative to the root dir, inside the allowed roots) with
 * `permissions` (default 0644), atomically; missing parent directories are created with
 * `dir_permissions` (default 0755).
 */
export async function runUploadFileTask(state: AttemptState): Promise<TaskOutcome> {
  const p = new ParameterReader('upload_file', state.exec.parameters);
  const target = p.requiredString('path');
  const data = p.requiredText('data');
  const mode = p.mode('permissions', DEFAULT_FILE_MODE);
  const dirMode = p.mode('dir_permissions', DEFAULT_DIR_MODE);
  p.check();
  const real = await resolveUnderRoots('upload_file path', target, state.rootDir, state.allowedRoots);
  await assertNotDirectory('upload_file path', real);
  const what = `${real} (${Buffer.byteLength(data)} bytes, mode ${formatMode(mode)})`;
  if (state.exec.check) {
    // Compares only: a check never writes (ADR 0031).
    const c = await compareFile(real, Buffer.from(data, 'utf8'), mode);
    return checked(state, c.changed ? 'would_change' : 'no_change', c.summary, c.diff);
  }
  if (state.exec.noop) {
    state.output.write('stdout', `would write ${what}\n`);
    return finished(state, { status: 'succeeded', exitCode: 0, attempts: 0 });
  }
  try {
    await writeFileAtomic(real, data, mode, dirMode);
  } catch (err) {
    return failedWith(
      state,
      new TaskIoError(`upload_file cannot write '${real}': ${(err as Error).message}`, { cause: err }),
      1,
    );
  }
  state.output.write('stdout', `wrote ${what}\n`);
  return finished(state, { status: 'succeeded', exitCode: 0, attempts: 1 });
}
