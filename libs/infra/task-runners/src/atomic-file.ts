import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fchmodSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { copyFile, mkdir, open, rename, unlink } from 'node:fs/promises';
import * as path from 'node:path';

/** Creates `dir` and missing parents with `dirMode` (less the umask). */
async function ensureDir(dir: string, dirMode: number): Promise<void> {
  await mkdir(dir, { recursive: true, mode: dirMode });
}

function tempPathFor(target: string): string {
  return path.join(
    path.dirname(target),
    `.${path.basename(target)}.granule-${process.pid}-${randomBytes(4).toString('hex')}.tmp`,
  );
}

async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

// Shared tail of both writers: the temp file exists and holds the data.
async function finish(temp: string, target: string, mode: number): Promise<void> {
  const handle = await open(temp, 'r+');
  try {
    await handle.chmod(mode); // the mode given to open() is reduced by the umask
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, target);
  await fsyncDir(path.dirname(target));
}

/**
 * Writes `data` to `target` so that readers see the old content or the new, never a part:
 * a temp file in the same directory, fsync, rename, fsync of the directory.
 */
export async function writeFileAtomic(
  target: string,
  data: string | Buffer,
  mode: number,
  dirMode: number,
): Promise<void> {
  await ensureDir(path.dirname(target), dirMode);
  const temp = tempPathFor(target);
  try {
    const handle = await open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(data);
    } finally {
      await handle.close();
    }
    await finish(temp, target, mode);
  } catch (err) {
    await unlink(temp).catch(() => undefined);
    throw err;
  }
}

/** Copies `source` to `target` atomically (see `writeFileAtomic`); the data is streamed, not loaded. */
export async function copyFileAtomic(source: string, target: string, mode: number, dirMode: number): Promise<void> {
  await ensureDir(path.dirname(target), dirMode);
  const temp = tempPathFor(target);
  try {
    await copyFile(source, temp, constants.COPYFILE_EXCL);
    await finish(temp, target, mode);
  } catch (err) {
    await unlink(temp).catch(() => undefined);
    throw err;
  }
}

/** Writes all of `data` at the file position of `fd` (a `writeSync` may write less than asked). */
export function writeAllSync(fd: number, data: string | Buffer): void {
  const buffer = typeof data === 'string' ? Buffer.from(data) : data;
  for (let off = 0; off < buffer.length;) off += writeSync(fd, buffer, off, buffer.length - off);
}

/**
 * `writeFileAtomic` with blocking calls, for small files on a latency-critical path (the agent's
 * state, a few hundred bytes): five system calls and two fsyncs without a trip through the
 * thread pool for each. Do not use it for task data, which can be large.
 */
export function writeFileAtomicSync(target: string, data: string | Buffer, mode: number, dirMode: number): void {
  const dir = path.dirname(target);
  mkdirSync(dir, { recursive: true, mode: dirMode });
  const temp = tempPathFor(target);
  try {
    const fd = openSync(temp, 'wx', 0o600);
    try {
      writeAllSync(fd, data);
      fchmodSync(fd, mode);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, target);
  } catch (err) {
    try {
      unlinkSync(temp);
    } catch {
      // never created, or already renamed
    }
    throw err;
  }
  const dirFd = openSync(dir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}
