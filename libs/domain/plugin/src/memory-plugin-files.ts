import picomatch from 'picomatch';
import { PluginEntryKind, PluginFiles, normalizePluginPath } from './plugin-files.port';

/**
 * `PluginFiles` over an in-memory map of path → content (directories are implied by the
 * paths; an empty directory can be given as a path ending in `/`). Used for packages read
 * from an archive and in tests.
 */
export class MemoryPluginFiles implements PluginFiles {
  private readonly files = new Map<string, string>();
  private readonly dirs = new Set<string>(['']);

  constructor(
    entries: Record<string, string>,
    readonly label = 'memory',
  ) {
    for (const [raw, content] of Object.entries(entries)) {
      const path = normalizePluginPath(raw);
      if (path === undefined) throw new Error(`bad plugin path ${raw}`);
      if (raw.endsWith('/')) this.addDirs(path);
      else {
        this.files.set(path, content);
        this.addDirs(path.split('/').slice(0, -1).join('/'));
      }
    }
  }

  private addDirs(dir: string): void {
    const parts = dir.split('/').filter(Boolean);
    for (let i = 0; i <= parts.length; i++) this.dirs.add(parts.slice(0, i).join('/'));
  }

  /** Every file path, sorted. */
  paths(): string[] {
    return [...this.files.keys()].sort();
  }

  async readText(path: string): Promise<string> {
    const key = normalizePluginPath(path);
    const text = key === undefined ? undefined : this.files.get(key);
    if (text === undefined) throw new Error(`${path}: no such file`);
    return text;
  }

  async list(dir: string): Promise<string[]> {
    const key = normalizePluginPath(dir);
    if (key === undefined || !this.dirs.has(key)) throw new Error(`${dir}: no such directory`);
    const prefix = key === '' ? '' : `${key}/`;
    const names = new Set<string>();
    for (const p of [...this.files.keys(), ...this.dirs]) {
      if (p !== key && p.startsWith(prefix)) names.add(p.slice(prefix.length).split('/')[0]);
    }
    return [...names].sort();
  }

  async stat(path: string): Promise<PluginEntryKind | undefined> {
    const key = normalizePluginPath(path);
    if (key === undefined) return undefined;
    if (this.files.has(key)) return 'file';
    return this.dirs.has(key) ? 'dir' : undefined;
  }

  async glob(pattern: string): Promise<string[]> {
    const isMatch = picomatch(pattern.replace(/^\.\//, ''), { dot: false });
    return this.paths().filter((p) => isMatch(p));
  }
}
