import { createHash } from 'node:crypto';
import { constants as fsConstants, createReadStream, createWriteStream } from 'node:fs';
import {
  chmod,
  copyFile,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createGunzip } from 'node:zlib';
import { Parser, ReadEntry, create } from 'tar';
import { INPUT_LIMITS } from '@granule/core';
import { DATA_FILE_RE, MemoryPluginFiles, PluginError, assertValidPlugin, normalizePluginPath } from '@granule/plugin';
import { NodePluginFiles } from './node-plugin-files';

/** Default limit on the uncompressed size of a package being read or extracted: 512 MiB. */
export const DEFAULT_MAX_PACKAGE_BYTES = 512 * 1024 * 1024;

/** Every entry of a package has this mtime (the epoch), so builds do not depend on the clock. */
export const PACKAGE_MTIME = new Date(0);

/** Files the build writes into every package. */
export const MANIFEST_FILE = 'MANIFEST.json';
export const CHECKSUMS_FILE = 'checksums.sha256';

// Never packaged: VCS data, editor litter, and packages built earlier into the same directory.
const SKIP = [/^\.git(\/|$)/, /(^|\/)\.DS_Store$/, /\.tar\.gz$/, /(^|\/)__pycache__(\/|$)/];

interface SourceEntry {
  rel: string;
  kind: 'file' | 'dir';
  executable: boolean;
}

async function walk(root: string, rel = ''): Promise<SourceEntry[]> {
  const out: SourceEntry[] = [];
  const names = (await readdir(path.join(root, rel))).sort();
  for (const name of names) {
    const child = rel === '' ? name : `${rel}/${name}`;
    if (SKIP.some((re) => re.test(child))) continue;
    const s = await lstat(path.join(root, child));
    if (s.isSymbolicLink()) {
      throw new PluginError(
        'PLUGIN_PACKAGE_UNSAFE',
        `${child} is a symlink; a plugin package holds regular files only (copy the target in)`,
      );
    }
    if (s.isDirectory()) {
      out.push({ rel: child, kind: 'dir', executable: true });
      out.push(...(await walk(root, child)));
    } else if (s.isFile()) {
      out.push({ rel: child, kind: 'file', executable: (s.mode & 0o111) !== 0 });
    }
  }
  return out;
}

const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

/** Size and sha256 of a file, read in chunks. */
async function hashFile(file: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(file)) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { size, sha256: hash.digest('hex') };
}

/** What {@link buildPluginPackage} wrote. */
export interface BuiltPackage {
  file: string;
  name: string;
  version: string;
  /** sha256 of the .tar.gz. */
  sha256: string;
  /** Packaged files (without MANIFEST.json and checksums.sha256), sorted. */
  files: string[];
}

/**
 * Builds a reproducible `<name>-<version>.tar.gz` from a plugin directory. The plugin is
 * validated first; an invalid plugin throws `InvalidInputError` with the validator's report.
 * The archive holds the plugin's files at its root plus `MANIFEST.json` (name, version,
 * package_version, files with size and sha256) and `checksums.sha256` (`sha256sum -c` format).
 * Entries are sorted by path, mtime is the epoch, uid/gid are 0 with no user/group names,
 * modes are 0644 for files and 0755 for directories and executables, and the gzip header
 * carries no timestamp: the same input gives byte-identical output.
 */
export async function buildPluginPackage(dir: string, out?: string): Promise<BuiltPackage> {
  const report = await assertValidPlugin(new NodePluginFiles(dir));
  const name = report.name ?? path.basename(path.resolve(dir));
  const version = await readVersion(dir);
  const target = path.resolve(out ?? path.join(dir, '..', `${name}-${version}.tar.gz`));

  const entries = await walk(path.resolve(dir));
  const files = entries.filter((e) => e.kind === 'file' && e.rel !== MANIFEST_FILE && e.rel !== CHECKSUMS_FILE);
  const sums: { rel: string; size: number; sha256: string }[] = [];
  for (const f of files) sums.push({ rel: f.rel, ...(await hashFile(path.join(dir, f.rel))) });
  const manifest = `${JSON.stringify({ name, version, package_version: report.packageVersion, files: sums.map((s) => ({ path: s.rel, size: s.size, sha256: s.sha256 })) }, null, 2)}\n`;
  const checksums =
    [...sums.map((s) => `${s.sha256}  ${s.rel}`), `${sha256(manifest)}  ${MANIFEST_FILE}`].join('\n') + '\n';

  // Stage into a temp dir so the generated files sit next to the plugin's without touching it.
  const stage = await mkdtemp(path.join(tmpdir(), 'granule-plugin-build-'));
  try {
    const staged: SourceEntry[] = [];
    for (const e of entries.filter((x) => x.rel !== MANIFEST_FILE && x.rel !== CHECKSUMS_FILE)) {
      const dst = path.join(stage, e.rel);
      if (e.kind === 'dir') await mkdir(dst, { recursive: true });
      else {
        await mkdir(path.dirname(dst), { recursive: true });
        await copyFile(path.join(dir, e.rel), dst);
      }
      staged.push(e);
    }
    await writeFile(path.join(stage, MANIFEST_FILE), manifest);
    await writeFile(path.join(stage, CHECKSUMS_FILE), checksums);
    staged.push(
      { rel: MANIFEST_FILE, kind: 'file', executable: false },
      { rel: CHECKSUMS_FILE, kind: 'file', executable: false },
    );
    const modes = new Map(staged.map((e) => [e.rel, e.kind === 'dir' || e.executable ? 0o755 : 0o644]));
    const list = staged.map((e) => e.rel).sort();
    await mkdir(path.dirname(target), { recursive: true });
    await create(
      {
        file: target,
        cwd: stage,
        gzip: { level: 9 },
        portable: true,
        mtime: PACKAGE_MTIME,
        noDirRecurse: true,
        onWriteEntry: (entry) => {
          const mode = modes.get(entry.path.replace(/\/$/, ''));
          if (entry.stat && mode !== undefined) entry.stat.mode = (entry.stat.mode & ~0o7777) | mode;
          // Directories carry no mtime in portable mode; files get PACKAGE_MTIME.
        },
      },
      list,
    );
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
  const built = await hashFile(target);
  return { file: target, name, version, sha256: built.sha256, files: sums.map((s) => s.rel) };
}

async function readVersion(dir: string): Promise<string> {
  const text = await readFile(path.join(dir, 'metadata.yaml'), 'utf8');
  const { parse } = await import('yaml');
  const data = parse(text) as { version?: unknown };
  return data && data.version !== undefined ? String(data.version) : '0.0.0';
}

/** Limits for reading or extracting a package. */
export interface PackageReadOptions {
  /** Largest total uncompressed size of the entries; default {@link DEFAULT_MAX_PACKAGE_BYTES}. */
  maxBytes?: number;
}

/**
 * One entry of a package, read and checked. Only YAML/JSON files (the plugin's configuration
 * and task files) carry their bytes in `data`; every other file is counted in `size` only.
 */
export interface PackageEntry {
  path: string;
  type: 'file' | 'dir' | 'symlink' | 'hardlink';
  mode: number;
  /** Uncompressed size of a file. */
  size?: number;
  data?: Buffer;
  linkpath?: string;
}

/** Largest YAML/JSON file of a package read into memory (the limit of any text input file). */
export const MAX_PACKAGE_DATA_FILE_BYTES = INPUT_LIMITS.inputFileBytes;

function unsafe(file: string, message: string): PluginError {
  return new PluginError('PLUGIN_PACKAGE_UNSAFE', `${file}: ${message}; the package was not extracted`);
}

function checkEntryPath(file: string, raw: string): string {
  const p = raw.replace(/\/+$/, '');
  if (p.startsWith('/') || /^[A-Za-z]:/.test(p)) throw unsafe(file, `entry '${raw}' has an absolute path`);
  if (p.split('/').includes('..')) throw unsafe(file, `entry '${raw}' contains '..'`);
  const norm = normalizePluginPath(p.replace(/^\.\//, ''));
  if (norm === undefined) throw unsafe(file, `entry '${raw}' leaves the package directory`);
  return norm;
}

function checkLinkTarget(file: string, entryPath: string, target: string, hard: boolean): void {
  const kind = hard ? 'hard link' : 'symlink';
  if (target.startsWith('/')) throw unsafe(file, `${kind} '${entryPath}' points to the absolute path '${target}'`);
  const base = hard ? '' : entryPath.split('/').slice(0, -1).join('/');
  const resolved = normalizePluginPath(base === '' ? target : `${base}/${target}`);
  if (resolved === undefined) throw unsafe(file, `${kind} '${entryPath}' points outside the package ('${target}')`);
}

const MAX_LINK_HOPS = 40;

/**
 * Resolves a path inside the package the way the filesystem will once it is extracted: each
 * component that is a symlink entry is replaced by its target. Undefined when the path leaves
 * the package (or the links loop).
 */
function resolveThroughLinks(components: string[], links: ReadonlyMap<string, string>): string | undefined {
  const pending = [...components];
  const out: string[] = [];
  let hops = 0;
  while (pending.length > 0) {
    const c = pending.shift() as string;
    if (c === '' || c === '.') continue;
    if (c === '..') {
      if (out.length === 0) return undefined;
      out.pop();
      continue;
    }
    out.push(c);
    const target = links.get(out.join('/'));
    if (target === undefined) continue;
    if (++hops > MAX_LINK_HOPS || target.startsWith('/')) return undefined;
    out.pop();
    pending.unshift(...target.split('/'));
  }
  return out.join('/');
}

/**
 * Checks the links of a whole package together (a chain can leave the package although each
 * link alone stays inside: `d/a -> ..`, then `d/a/b -> ../x`): no entry may lie beneath a
 * symlink, and every link must resolve inside the package through the other links.
 */
function checkLinkStructure(file: string, entries: PackageEntry[]): void {
  const links = new Map(entries.filter((e) => e.type === 'symlink').map((e) => [e.path, e.linkpath ?? '']));
  if (links.size === 0 && !entries.some((e) => e.type === 'hardlink')) return;
  for (const e of entries) {
    const parts = e.path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const prefix = parts.slice(0, i).join('/');
      if (links.has(prefix))
        throw unsafe(
          file,
          `entry '${e.path}' lies beneath the symlink '${prefix}'; an entry may not be written through a link`,
        );
    }
  }
  const files = new Set(entries.filter((e) => e.type === 'file').map((e) => e.path));
  for (const e of entries) {
    if (e.type === 'symlink') {
      const dir = e.path.split('/').slice(0, -1);
      if (resolveThroughLinks([...dir, ...(e.linkpath ?? '').split('/')], links) === undefined)
        throw unsafe(file, `symlink '${e.path}' resolves outside the package through other links ('${e.linkpath}')`);
    } else if (e.type === 'hardlink') {
      const resolved = resolveThroughLinks((e.linkpath ?? '').split('/'), links);
      if (resolved === undefined || !files.has(resolved))
        throw unsafe(file, `hard link '${e.path}' must point to a file of the package ('${e.linkpath}')`);
      e.linkpath = resolved;
    }
  }
}

/** Where a scan sends a checked file entry's bytes; resolves with them when it keeps them in memory. */
type FileSink = (entry: PackageEntry, stream: ReadEntry) => Promise<Buffer | undefined>;

/**
 * Reads a `.tar.gz` package entry by entry, checking each header as it comes and passing each
 * file's bytes to `sink` as they are unpacked (one entry at a time: the parser waits while the
 * sink is slow, so no more than a chunk is in memory). Rejects (with a `PluginError` naming the
 * entry): absolute paths, paths with `..`, symlinks and hard links that point outside the
 * package, device/fifo entries, and a total uncompressed size over `maxBytes`. The links of the
 * whole package are checked together at the end ({@link checkLinkStructure}). On a failure it
 * rejects only once every write the sink began has settled.
 */
async function scanPackage(file: string, options: PackageReadOptions, sink: FileSink): Promise<PackageEntry[]> {
  const max = options.maxBytes ?? DEFAULT_MAX_PACKAGE_BYTES;
  const entries: PackageEntry[] = [];
  const writes: Promise<void>[] = [];
  let total = 0;
  await new Promise<void>((resolve, reject) => {
    let failed = false;
    const fail = (err: unknown): void => {
      if (failed) return;
      failed = true;
      source.destroy();
      const refusal =
        err instanceof PluginError
          ? err
          : new PluginError(
              'PLUGIN_PACKAGE_UNREADABLE',
              `${file}: not a readable .tar.gz package: ${err instanceof Error ? err.message : String(err)}`,
            );
      void Promise.allSettled(writes).then(() => reject(refusal));
    };
    const seen = new Map<string, string>();
    const parser = new Parser({
      strict: true,
      onReadEntry: (entry: ReadEntry) => {
        if (failed) return entry.resume();
        try {
          const p = checkEntryPath(file, entry.path);
          // One entry per path (a directory may repeat): a second one under the same name
          // (`a/.` after `a`) would have the checks judge one entry and the disk get another.
          const before = seen.get(p);
          if (before !== undefined && !(before === 'Directory' && entry.type === 'Directory'))
            throw unsafe(file, `entry '${entry.path}' appears twice or clashes with another entry`);
          seen.set(p, entry.type);
          total += entry.size ?? 0;
          if (total > max)
            throw new PluginError(
              'PLUGIN_PACKAGE_TOO_LARGE',
              `${file}: the package unpacks to more than ${max} bytes, the limit; the package was not extracted`,
            );
          const mode = (entry.mode ?? 0o644) & 0o777;
          if (entry.type === 'Directory') entries.push({ path: p, type: 'dir', mode });
          else if (entry.type === 'SymbolicLink' || entry.type === 'Link') {
            checkLinkTarget(file, p, entry.linkpath ?? '', entry.type === 'Link');
            const linkpath =
              entry.type === 'Link' ? checkEntryPath(file, entry.linkpath ?? '') : (entry.linkpath ?? '');
            entries.push({ path: p, type: entry.type === 'Link' ? 'hardlink' : 'symlink', mode, linkpath });
          } else if (entry.type === 'File' || entry.type === 'OldFile' || entry.type === 'ContiguousFile') {
            const e: PackageEntry = { path: p, type: 'file', mode, size: entry.size ?? 0 };
            entries.push(e);
            writes.push(
              sink(e, entry).then(
                (data) => {
                  if (data) e.data = data;
                },
                (err: unknown) => {
                  entry.resume();
                  fail(err);
                },
              ),
            );
            return;
          } else if (!/Header|Pax|Extended/.test(entry.type)) {
            throw unsafe(
              file,
              `entry '${entry.path}' is a ${entry.type}; only files, directories and links inside the package are allowed`,
            );
          }
          entry.resume();
        } catch (err) {
          entry.resume();
          fail(err);
        }
      },
    });
    parser.on('error', fail);
    parser.on('warn', (_code: string, message: string | Error) =>
      fail(new Error(typeof message === 'string' ? message : message.message)),
    );
    const source = createReadStream(file);
    source.on('error', fail);
    const gunzip = createGunzip();
    gunzip.on('error', fail);
    parser.on('end', () => {
      void Promise.all(writes).then(() => {
        if (!failed) resolve();
      });
    });
    source.pipe(gunzip).pipe(parser);
  });
  checkLinkStructure(file, entries);
  return entries;
}

/** Reads an entry's bytes into memory, refusing more than `limit` of them. */
function collect(file: string, e: PackageEntry, stream: ReadEntry, limit: number): Promise<Buffer> {
  if ((e.size ?? 0) > limit)
    return Promise.reject(
      new PluginError(
        'PLUGIN_PACKAGE_TOO_LARGE',
        `${file}: '${e.path}' holds ${e.size} bytes; a YAML or JSON file of a package may hold at most ${limit}`,
      ),
    );
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

/**
 * Reads a `.tar.gz` package's entries, checked as {@link scanPackage} says, without writing
 * anything: the YAML/JSON files (configuration and tasks) come with their bytes in `data`;
 * every other file's bytes are checked and counted, then dropped, so a package of any size
 * needs no more memory than its metadata.
 */
export async function readPackageEntries(file: string, options: PackageReadOptions = {}): Promise<PackageEntry[]> {
  return scanPackage(file, options, async (e, stream) => {
    if (DATA_FILE_RE.test(e.path)) return collect(file, e, stream, MAX_PACKAGE_DATA_FILE_BYTES);
    stream.resume();
    await new Promise<void>((resolve, reject) => {
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    return undefined;
  });
}

/** Throws unless `dir` (which exists) really lies inside `root`, symlinks resolved. */
async function assertRealPathInside(file: string, root: string, dir: string, entryPath: string): Promise<void> {
  const real = await realpath(dir);
  if (real !== root && !real.startsWith(root + path.sep))
    throw unsafe(file, `entry '${entryPath}' would be written outside the package directory`);
}

/** Streams one checked file entry to `target` (which must not exist yet). */
async function writeEntry(file: string, e: PackageEntry, stream: ReadEntry, target: string): Promise<void> {
  try {
    await new Promise<void>((resolve, reject) => {
      const out = createWriteStream(target, { flags: 'wx', mode: e.mode & 0o111 ? 0o755 : 0o644 });
      out.on('error', reject);
      out.on('close', resolve);
      stream.on('error', reject);
      stream.pipe(out);
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'EISDIR' || code === 'ENOTDIR')
      throw unsafe(file, `entry '${e.path}' appears twice or clashes with another entry`);
    throw new PluginError(
      'PLUGIN_PACKAGE_UNREADABLE',
      `${file}: cannot write entry '${e.path}' to ${target}: ${(err as Error).message}`,
    );
  }
  await chmod(target, e.mode & 0o111 ? 0o755 : 0o644);
}

/**
 * Extracts a package into `dest` (created; it must be empty or absent), streaming each file to
 * disk as it is unpacked (a package of any size needs a chunk of memory, not its size). Every
 * entry is checked (see {@link scanPackage}) before it is written, and links are created only
 * after the links of the whole package were checked together; when a check fails, whatever was
 * written is removed again and `dest` is left as it was found. Files get 0644 or 0755,
 * directories 0755.
 */
export async function extractPluginPackage(
  file: string,
  dest: string,
  options: PackageReadOptions = {},
): Promise<string[]> {
  const root = path.resolve(dest);
  const existing = await readdir(root).catch(() => undefined);
  if (existing !== undefined && existing.length > 0)
    throw new PluginError('PLUGIN_TARGET_EXISTS', `${dest} is not empty; extract into a new directory`);
  await mkdir(root, { recursive: true });
  try {
    // The checks on paths come first; these are on the disk (a second line of defence).
    const realRoot = await realpath(root);
    const entries = await scanPackage(file, options, async (e, stream) => {
      const target = path.join(root, e.path);
      if (!target.startsWith(root + path.sep)) throw unsafe(file, `entry '${e.path}' leaves the package directory`);
      await mkdir(path.dirname(target), { recursive: true });
      await assertRealPathInside(file, realRoot, path.dirname(target), e.path);
      await writeEntry(file, e, stream, target);
      return undefined;
    });
    for (const e of entries) {
      if (e.type === 'dir') await mkdir(path.join(root, e.path), { recursive: true, mode: 0o755 });
    }
    for (const e of entries) {
      if (e.type !== 'symlink' && e.type !== 'hardlink') continue;
      const target = path.join(root, e.path);
      if (!target.startsWith(root + path.sep)) throw unsafe(file, `entry '${e.path}' leaves the package directory`);
      await mkdir(path.dirname(target), { recursive: true });
      await assertRealPathInside(file, realRoot, path.dirname(target), e.path);
      if (e.type === 'symlink') await symlink(e.linkpath ?? '', target);
      else await copyFile(path.join(root, e.linkpath ?? ''), target, fsConstants.COPYFILE_EXCL);
    }
    return entries.map((e) => e.path);
  } catch (err) {
    if (existing === undefined) await rm(root, { recursive: true, force: true });
    else for (const name of await readdir(root)) await rm(path.join(root, name), { recursive: true, force: true });
    throw err;
  }
}

/** Reads a package into memory as `PluginFiles` (for validate/load/plan without extracting). */
export async function readPluginPackage(file: string, options: PackageReadOptions = {}): Promise<MemoryPluginFiles> {
  const entries = await readPackageEntries(file, options);
  const map: Record<string, string> = {};
  for (const e of entries) {
    if (e.type === 'dir') map[`${e.path}/`] = '';
    else if (e.type === 'file') map[e.path] = (e.data ?? Buffer.alloc(0)).toString('utf8');
  }
  // Links were checked to stay inside; read them as copies of their targets.
  for (const e of entries) {
    if (e.type !== 'symlink' && e.type !== 'hardlink') continue;
    const base = e.type === 'symlink' ? e.path.split('/').slice(0, -1).join('/') : '';
    const target = normalizePluginPath(base === '' ? (e.linkpath ?? '') : `${base}/${e.linkpath ?? ''}`);
    if (target !== undefined && map[target] !== undefined) map[e.path] = map[target];
  }
  return new MemoryPluginFiles(map, file);
}
