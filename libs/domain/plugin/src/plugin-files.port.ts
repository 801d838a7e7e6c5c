/** What a path points at; `undefined` from `stat` means nothing is there. */
export type PluginEntryKind = 'file' | 'dir' | 'symlink' | 'other';

/**
 * The file-system port the plugin logic reads through. Every path is POSIX-style and relative
 * to the plugin's root directory (`metadata.yaml`, `graphs/deploy.yaml`); implementations
 * refuse paths that leave the root.
 */
export interface PluginFiles {
  /** A label for messages: the directory or package the files come from. */
  readonly label: string;
  /** Reads a file as UTF-8; rejects when it does not exist or is not a file. */
  readText(path: string): Promise<string>;
  /** Names of the entries of a directory, sorted; rejects when it is not a directory. */
  list(dir: string): Promise<string[]>;
  /** What is at `path`, without following a symlink; `undefined` when nothing is there. */
  stat(path: string): Promise<PluginEntryKind | undefined>;
  /** Files (not directories) whose relative path matches the glob, sorted by path. */
  glob(pattern: string): Promise<string[]>;
}

/** True when a `*_path` value is a glob rather than one path. */
export function isGlobPattern(value: string): boolean {
  return /[*?[\]{}]/.test(value);
}

/**
 * Normalises a relative plugin path: `./a//b/` → `a/b`. Returns `undefined` for an absolute
 * path or one that climbs out of the root with `..`.
 */
export function normalizePluginPath(path: string): string | undefined {
  if (path.startsWith('/') || /^[A-Za-z]:[\\/]/.test(path) || path.includes('\\')) return undefined;
  const parts: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (parts.length === 0) return undefined;
      parts.pop();
    } else {
      parts.push(part);
    }
  }
  return parts.join('/');
}
