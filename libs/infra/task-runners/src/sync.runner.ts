import { mkdir } from 'node:fs/promises';
import * as path from 'node:path';
import { CHECK_DIFF_LIMIT_BYTES } from '@granule/run-events';
import { withCheck } from './check-mode';
import { resolveUnderRoots } from './path-guard';
import { runWithRetries } from './run-process';
import { type AttemptState } from './attempt-state';
import { ParameterReader } from './task-parameters';
import { SYNC_DEFAULTS, type TaskOutcome } from './task-runner.types';

/** `rsync://host/module/...`, `host::module/...` or `[user@]host:path` (rsync's own rules). */
export function isRemoteRsyncPath(value: string): boolean {
  return value.startsWith('rsync://') || /^[^/]*::/.test(value) || /^[^/:]+:/.test(value);
}

// rsync copies a directory's contents when the source ends with '/' ('/.' means the same);
// path.resolve drops both, so the slash is put back.
function withTrailingSlash(original: string, resolved: string): string {
  const contentsOnly = original.endsWith('/') || original.endsWith('/.') || original === '.';
  return contentsOnly && !resolved.endsWith('/') ? `${resolved}/` : resolved;
}

/**
 * sync (Fuel's rsync): `rsync -a --itemize-changes [--delete] [--dry-run] <src> <dst>`. `src` is a
 * local path (relative to the root dir) or an rsync URL; `dst` is local and inside the allowed
 * roots. Trailing slashes keep their rsync meaning. `delete: true` removes files absent from src.
 */
export async function runSyncTask(state: AttemptState): Promise<TaskOutcome> {
  const p = new ParameterReader('sync', state.exec.parameters);
  const src = p.requiredString('src');
  const dst = p.requiredString('dst');
  const del = p.boolean('delete', false);
  const timeoutSec = p.seconds('timeout', SYNC_DEFAULTS.timeout);
  const retries = p.count('retries', SYNC_DEFAULTS.retries);
  const intervalSec = p.seconds('interval', SYNC_DEFAULTS.interval);
  if (src.startsWith('-')) p.problem(`parameters.src: '${src}' looks like an rsync option, not a path`);
  if (dst && isRemoteRsyncPath(dst)) p.problem(`parameters.dst: '${dst}' is remote; sync writes to this host only`);
  p.check();

  const dstReal = await resolveUnderRoots('sync dst', dst, state.rootDir, state.allowedRoots);
  const srcArg = isRemoteRsyncPath(src) ? src : withTrailingSlash(src, path.resolve(state.rootDir, src));
  const dstArg = withTrailingSlash(dst, dstReal);
  if (!state.exec.noop) await mkdir(path.dirname(dstReal), { recursive: true });
  const args = [
    '-a',
    '--itemize-changes',
    ...(del ? ['--delete'] : []),
    ...(state.exec.noop ? ['--dry-run'] : []),
    srcArg,
    dstArg,
  ];
  // Check mode: the dry run's itemized changes (its stdout) say what a sync would change.
  if (state.exec.check) state.output.captureStream('stdout', CHECK_DIFF_LIMIT_BYTES);
  const outcome = await runWithRetries(
    { command: state.rsyncBin, args, cwd: state.rootDir, env: state.baseEnv },
    { label: 'rsync', timeoutSec, retries, intervalSec, isSuccess: (code) => code === 0 },
    state,
    state.startedAt,
  );
  if (!state.exec.check) return outcome;
  const { text, totalBytes } = state.output.captured();
  const changes = text.split('\n').filter((l) => l !== '').length;
  return totalBytes > 0
    ? withCheck(
        state,
        outcome,
        'would_change',
        `rsync --dry-run lists ${changes}${text.length < totalBytes ? ' or more' : ''} change${changes === 1 ? '' : 's'}`,
        text,
      )
    : withCheck(state, outcome, 'no_change', 'rsync --dry-run lists no change');
}
