import { realpath } from 'node:fs/promises';
import * as path from 'node:path';
import { PathOutsideRootsError } from './task-runner.errors';

/**
 * The real location of `absPath`: symlinks of its deepest existing ancestor resolved, the part
 * that does not exist yet appended as written (it cannot contain `..`: the path is normalised).
 */
export async function realLocation(absPath: string): Promise<string> {
  try {
    return await realpath(absPath);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const parent = path.dirname(absPath);
    if ((code === 'ENOENT' || code === 'ENOTDIR') && parent !== absPath) {
      return path.join(await realLocation(parent), path.basename(absPath));
    }
    throw err;
  }
}

function isWithin(candidate: string, root: string): boolean {
  if (candidate === root) return true;
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return candidate.startsWith(prefix);
}

/**
 * Resolves a destination (relative to `baseDir`) and returns where it really leads, or throws
 * `PathOutsideRootsError` when that is not inside one of `allowedRoots` (themselves resolved the
 * same way). `what` names the parameter in the message, e.g. `upload_file path`.
 *
 * The check happens before the write: a symlink swapped in between is not caught (the agent's
 * roots are expected to be writable by the agent only).
 */
export async function resolveUnderRoots(
  what: string,
  target: string,
  baseDir: string,
  allowedRoots: readonly string[],
): Promise<string> {
  const real = await realLocation(path.resolve(baseDir, target));
  for (const root of allowedRoots) {
    if (isWithin(real, await realLocation(path.resolve(baseDir, root)))) return real;
  }
  throw new PathOutsideRootsError(what, target, real, allowedRoots);
}
