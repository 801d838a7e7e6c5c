import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
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
  /** An entry was removed to keep the cache within its bound (least recently used first). */
  evicted?(entry: { digest: string; name: string; version: string; bytes: number }): void;
}

/** How much the cache may keep. */
export interface ArtifactCacheOptions {
  /**
   * The unpacked bytes the cache keeps at most; after a fetch, the least recently used entries
   * that no task holds are removed until the cache is within it. An entry a task holds, and the
   * one just fetched, are never removed, so a single package larger than the bound still works.
   * Default: DEFAULT_ARTIFACT_CACHE_BYTES.
   */
  maxBytes?: number;
}

/** The agent's default bound on its package copies: 2 GiB. */
export const DEFAULT_ARTIFACT_CACHE_BYTES = 2 * 1024 ** 3;

/** A copy handed to a task; `release()` when the task no longer reads it (idempotent). */
export interface HeldArtifact {
  dir: string;
  release(): void;
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
 *
 * Every use stamps the marker's mtime, so the least recently used entries are known across
 * restarts; after each fetch the cache trims itself to `maxBytes` (see ArtifactCacheOptions),
 * never removing an entry a task holds (`hold`).
 */
export class ArtifactCache {
  private readonly checked = new Set<string>();
  private readonly pending = new Map<string, Promise<string>>();
  /** How many tasks hold each digest's copy (`hold` until `release`). */
  private readonly held = new Map<string, number>();
  private readonly maxBytes: number;
  /** Artifacts fetched by this cache since it was made. */
  fetches = 0;

  constructor(
    readonly root: string,
    private readonly source: ArtifactSource,
    private readonly events: ArtifactCacheEvents = {},
    options: ArtifactCacheOptions = {},
  ) {
    this.maxBytes = options.maxBytes ?? DEFAULT_ARTIFACT_CACHE_BYTES;
  }

  /**
   * Like `ensure`, and the copy is held (never evicted) until `release()`: what a task that
   * reads the files while it runs asks for.
   */
  async hold(ref: PackageRef): Promise<HeldArtifact> {
    this.held.set(ref.digest, (this.held.get(ref.digest) ?? 0) + 1);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      const left = (this.held.get(ref.digest) ?? 1) - 1;
      if (left > 0) this.held.set(ref.digest, left);
      else this.held.delete(ref.digest);
    };
    try {
      return { dir: await this.ensure(ref), release };
    } catch (err) {
      release();
      throw err;
    }
  }

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
      await this.touch(ref.digest);
      return files;
    }
    this.checked.delete(ref.digest);
    if (problem !== 'absent') {
      this.events.discarded?.(ref, problem);
      await rm(this.entry(ref.digest), { recursive: true, force: true });
    }
    await this.fetch(ref);
    this.checked.add(ref.digest);
    await this.trim(ref.digest);
    return files;
  }

  /** Marks the entry as just used (its marker's mtime orders eviction). */
  private async touch(digest: string): Promise<void> {
    const now = new Date();
    await utimes(path.join(this.entry(digest), CACHE_MARKER), now, now).catch(() => undefined);
  }

  /**
   * Removes the least recently used entries until the cache is within `maxBytes`, sparing
   * `keep` (just fetched), every held entry and every entry being fetched. Entries without a
   * readable marker are left to `load`, which replaces them when they are next used.
   */
  private async trim(keep: string): Promise<void> {
    const entries: { digest: string; name: string; version: string; bytes: number; usedAt: number }[] = [];
    for (const name of await readdir(this.root)) {
      if (!PACKAGE_DIGEST_RE.test(name)) continue;
      const markerFile = path.join(this.entry(name), CACHE_MARKER);
      try {
        const marker = JSON.parse(await readFile(markerFile, 'utf8')) as Marker;
        const bytes = marker.files.reduce((sum, f) => sum + f.size, 0);
        entries.push({
          digest: name,
          name: marker.name,
          version: marker.version,
          bytes,
          usedAt: (await stat(markerFile)).mtimeMs,
        });
      } catch {
        continue;
      }
    }
    let total = entries.reduce((sum, e) => sum + e.bytes, 0);
    for (const e of entries.sort((a, b) => a.usedAt - b.usedAt)) {
      if (total <= this.maxBytes) return;
      if (e.digest === keep || this.held.has(e.digest) || this.pending.has(e.digest)) continue;
      await rm(this.entry(e.digest), { recursive: true, force: true });
      this.checked.delete(e.digest);
      total -= e.bytes;
      this.events.evicted?.({ digest: e.digest, name: e.name, version: e.version, bytes: e.bytes });
    }
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
