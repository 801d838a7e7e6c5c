import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { extract } from 'tar';
import { PACKAGE_DIGEST_RE, type PackageRef } from '@granule/plugin';
import { digestFile } from './artifact-pack';
import { ArtifactError } from './artifact.errors';

/** Where the cache gets an artifact's bytes: writes the tar named `digest` into the new file `file`. */
export interface ArtifactSource {
  fetchTo(digest: string, file: string): Promise<unknown>;
}

/** What the cache reports (the agent logs it and counts fetches). */
export interface ArtifactCacheEvents {
  fetched?(ref: PackageRef, detail: { bytes: number; ms: number }): void;
  /** A cache entry was found unusable and is fetched again. */
  discarded?(ref: PackageRef, reason: string): void;
}

/** Written last into an entry before it is renamed into place: what the entry must hold. */
export const CACHE_MARKER = 'complete.json';

interface Marker {
  digest: string;
  name: string;
  version: string;
  files: { path: string; size: number; sha256: string }[];
}

async function listFiles(root: string, rel = '', out: Marker['files'] = []): Promise<Marker['files']> {
  for (const name of (await readdir(path.join(root, rel))).sort()) {
    const child = rel === '' ? name : `${rel}/${name}`;
    const s = await lstat(path.join(root, child));
    if (s.isDirectory()) await listFiles(root, child, out);
    else if (s.isFile()) out.push({ path: child, size: s.size, sha256: await sha256Of(path.join(root, child)) });
  }
  return out;
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * The agent's copies of packages, one folder per digest under `root`:
 * `<root>/<digest>/files/` holds the unpacked deployment files and `<root>/<digest>/complete.json`
 * lists them with their sizes and SHA-256. An entry is built in a temporary folder (fetch, check
 * the tar's SHA-256 against the digest, unpack, write the marker last) and renamed into place,
 * so a crash leaves no entry that looks complete. The first use of an entry in a process checks
 * every file against the marker; a missing marker, a marker for another digest or a changed file
 * makes the entry be thrown away and fetched again. Later uses in the same process check only
 * that the marker is there.
 */
export class ArtifactCache {
  private readonly checked = new Set<string>();
  private readonly pending = new Map<string, Promise<string>>();
  /** Artifacts fetched by this cache since it was made. */
  fetches = 0;

  constructor(
    readonly root: string,
    private readonly source: ArtifactSource,
    private readonly events: ArtifactCacheEvents = {},
  ) {}

  /** The folder the package `ref` is unpacked in, fetched first unless a sound copy is cached. */
  ensure(ref: PackageRef): Promise<string> {
    if (!PACKAGE_DIGEST_RE.test(ref.digest))
      return Promise.reject(
        new ArtifactError('ARTIFACT_NOT_FOUND', `package ${ref.name} ${ref.version}: '${ref.digest}' is not a digest`),
      );
    const running = this.pending.get(ref.digest);
    if (running) return running;
    const loading = this.load(ref).finally(() => this.pending.delete(ref.digest));
    this.pending.set(ref.digest, loading);
    return loading;
  }

  private entry(digest: string): string {
    return path.join(this.root, digest);
  }

  private async load(ref: PackageRef): Promise<string> {
    const files = path.join(this.entry(ref.digest), 'files');
    const problem = await this.problemOf(ref.digest, !this.checked.has(ref.digest));
    if (problem === undefined) {
      this.checked.add(ref.digest);
      return files;
    }
    this.checked.delete(ref.digest);
    if (problem !== 'absent') {
      this.events.discarded?.(ref, problem);
      await rm(this.entry(ref.digest), { recursive: true, force: true });
    }
    await this.fetch(ref);
    this.checked.add(ref.digest);
    return files;
  }

  /** Why the entry cannot be used ('absent' when there is none), or undefined when it can. */
  private async problemOf(digest: string, deep: boolean): Promise<string | undefined> {
    const dir = this.entry(digest);
    let marker: Marker;
    try {
      marker = JSON.parse(await readFile(path.join(dir, CACHE_MARKER), 'utf8')) as Marker;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return `its ${CACHE_MARKER} is unreadable`;
      const exists = await lstat(dir).then(
        () => true,
        () => false,
      );
      return exists ? `it has no ${CACHE_MARKER} (written half)` : 'absent';
    }
    if (marker.digest !== digest || !Array.isArray(marker.files)) return `its ${CACHE_MARKER} is for another package`;
    if (!deep) return undefined;
    for (const f of marker.files) {
      const file = path.join(dir, 'files', f.path);
      const s = await lstat(file).catch(() => undefined);
      if (!s?.isFile()) return `${f.path} is missing`;
      if (s.size !== f.size || (await sha256Of(file)) !== f.sha256) return `${f.path} was changed`;
    }
    return undefined;
  }

  private async fetch(ref: PackageRef): Promise<void> {
    await mkdir(this.root, { recursive: true, mode: 0o700 });
    // What a process that died while fetching this digest left behind.
    const stale = `.tmp-${ref.digest.slice(0, 16)}-`;
    for (const name of await readdir(this.root))
      if (name.startsWith(stale)) await rm(path.join(this.root, name), { recursive: true, force: true });
    const tmp = await mkdtemp(path.join(this.root, stale));
    try {
      const tar = path.join(tmp, 'package.tar');
      const started = performance.now();
      await this.source.fetchTo(ref.digest, tar);
      this.fetches++;
      const got = await digestFile(tar);
      if (got.digest !== ref.digest)
        throw new ArtifactError(
          'ARTIFACT_DAMAGED',
          `package ${ref.name} ${ref.version}: the fetched bytes have SHA-256 ${got.digest.slice(0, 12)}…, not ${ref.digest.slice(0, 12)}…`,
        );
      const files = path.join(tmp, 'files');
      await mkdir(files, { mode: 0o755 });
      try {
        await extract({ file: tar, cwd: files, strict: true, preserveOwner: false });
      } catch (err) {
        throw new ArtifactError(
          'ARTIFACT_DAMAGED',
          `package ${ref.name} ${ref.version}: cannot unpack: ${(err as Error).message}`,
          { cause: err },
        );
      }
      await rm(tar);
      const marker: Marker = {
        digest: ref.digest,
        name: ref.name,
        version: ref.version,
        files: await listFiles(files),
      };
      await writeFile(path.join(tmp, CACHE_MARKER), JSON.stringify(marker), { mode: 0o644 });
      await rename(tmp, this.entry(ref.digest));
      this.events.fetched?.(ref, { bytes: got.size, ms: Math.round(performance.now() - started) });
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  }
}
