import { lstat, readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { glob } from 'tinyglobby';
import { type PluginEntryKind, type PluginFiles, normalizePluginPath } from '@granule/plugin';

/** `PluginFiles` over a directory on disk. Paths that leave the root are refused. */
export class NodePluginFiles implements PluginFiles {
  readonly root: string;

  constructor(
    root: string,
    readonly label: string = root,
  ) {
    this.root = path.resolve(root);
  }

  private abs(rel: string): string {
    const norm = normalizePluginPath(rel);
    if (norm === undefined) throw new Error(`${rel}: path leaves the plugin directory`);
    return path.join(this.root, norm);
  }

  async readText(rel: string): Promise<string> {
    return readFile(this.abs(rel), 'utf8');
  }

  async list(dir: string): Promise<string[]> {
    return (await readdir(this.abs(dir))).sort();
  }

  async stat(rel: string): Promise<PluginEntryKind | undefined> {
    if (normalizePluginPath(rel) === undefined) return undefined;
    try {
      const s = await lstat(this.abs(rel));
      return s.isSymbolicLink() ? 'symlink' : s.isFile() ? 'file' : s.isDirectory() ? 'dir' : 'other';
    } catch {
      return undefined;
    }
  }

  async glob(pattern: string): Promise<string[]> {
    const found = await glob(pattern, {
      cwd: this.root,
      onlyFiles: true,
      dot: false,
      followSymbolicLinks: false,
      expandDirectories: false,
    });
    return found.map((p) => p.split(path.sep).join('/')).sort();
  }
}
