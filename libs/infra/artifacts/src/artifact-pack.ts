import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { create } from 'tar';
import { ArtifactError } from './artifact.errors';

/** Every entry of an artifact has this mtime (the epoch): the same files give the same digest. */
export const ARTIFACT_MTIME = new Date(0);

/** What {@link packDirectory} wrote. */
export interface PackedArtifact {
  file: string;
  /** SHA-256 (hex) of the tar. */
  digest: string;
  size: number;
  /** Entries packed (files, directories, links). */
  entries: number;
}

interface Entry {
  rel: string;
  mode: number;
}

async function walk(root: string, rel: string, out: Entry[]): Promise<void> {
  const names = (await readdir(path.join(root, rel))).sort();
  for (const name of names) {
    const child = rel === '' ? name : `${rel}/${name}`;
    const s = await lstat(path.join(root, child));
    if (s.isDirectory()) {
      out.push({ rel: child, mode: 0o755 });
      await walk(root, child, out);
    } else if (s.isFile()) out.push({ rel: child, mode: s.mode & 0o111 ? 0o755 : 0o644 });
    else if (s.isSymbolicLink()) out.push({ rel: child, mode: 0o777 });
    // sockets, fifos and devices are not deployment files
  }
}

/**
 * Packs a folder (a plugin's `deployment_scripts/`) into a deterministic tar at `outFile`,
 * streaming: entries in byte order of their paths, mtime the epoch, no owners, modes 0755 for
 * directories and executables and 0644 for other files. The same files give the same bytes,
 * so the same digest. Returns the SHA-256 of the tar, computed as it is written.
 */
export async function packDirectory(dir: string, outFile: string): Promise<PackedArtifact> {
  const root = path.resolve(dir);
  const entries: Entry[] = [];
  try {
    await walk(root, '', entries);
  } catch (err) {
    throw new ArtifactError(
      'ARTIFACT_UNREADABLE',
      `${dir}: cannot read the deployment files: ${(err as Error).message}`,
      { cause: err },
    );
  }
  const modes = new Map(entries.map((e) => [e.rel, e.mode]));
  const hash = createHash('sha256');
  let size = 0;
  const pack = create(
    {
      cwd: root,
      portable: true,
      mtime: ARTIFACT_MTIME,
      noDirRecurse: true,
      follow: false,
      onWriteEntry: (entry) => {
        const mode = modes.get(entry.path.replace(/\/$/, ''));
        if (entry.stat && mode !== undefined) entry.stat.mode = (entry.stat.mode & ~0o7777) | mode;
      },
    },
    // An empty folder is one entry, so even it is a valid tar.
    entries.length > 0 ? entries.map((e) => e.rel) : ['.'],
  );
  const tap = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  await pipeline(pack, tap, createWriteStream(outFile, { mode: 0o600 }));
  return { file: outFile, digest: hash.digest('hex'), size, entries: entries.length };
}

/** The SHA-256 (hex) and size of a file, read as a stream. */
export async function digestFile(file: string): Promise<{ digest: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(file)) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { digest: hash.digest('hex'), size };
}
