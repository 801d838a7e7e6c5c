import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { InvalidInputError } from '@granule/core';
import { DATA_FILE_RE } from '@granule/plugin';
import { isPackageFile, readPackageEntries } from '@granule/plugin-files';

/** An install request's body: where the plugin came from and its files. */
export interface PluginSourceFiles {
  source: string;
  /** Path → text; data files (YAML/JSON) with their content, other files empty, directories end in `/`. */
  files: Record<string, string>;
}

async function walk(root: string, rel: string, out: Record<string, string>): Promise<void> {
  const entries = await readdir(path.join(root, rel), { withFileTypes: true });
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const p = rel === '' ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) {
      out[`${p}/`] = '';
      await walk(root, p, out);
    } else if (e.isFile()) {
      out[p] = DATA_FILE_RE.test(e.name) ? await readFile(path.join(root, p), 'utf8') : '';
    }
  }
}

/**
 * Reads a plugin folder or `.tar.gz` package for an install request. Only the configuration
 * and task files travel with their content (paths of the others are kept so checks that they
 * exist still work); the deployment files go to the artifacts bucket on their own
 * (`storePluginArtifact`, ADR 0026).
 */
export async function readPluginSourceFiles(source: string): Promise<PluginSourceFiles> {
  const files: Record<string, string> = {};
  if (isPackageFile(source)) {
    for (const e of await readPackageEntries(source)) {
      if (e.type === 'dir') files[`${e.path}/`] = '';
      else if (e.type === 'file')
        files[e.path] = DATA_FILE_RE.test(e.path) ? (e.data ?? Buffer.alloc(0)).toString('utf8') : '';
    }
    return { source, files };
  }
  try {
    await walk(source, '', files);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const message =
      code === 'ENOENT'
        ? 'no such file or directory'
        : code === 'ENOTDIR'
          ? 'expected a plugin folder or a .tar.gz package, got a file'
          : (err as Error).message;
    throw new InvalidInputError([{ severity: 'error', code: 'PLUGIN_NOT_FOUND', message, file: source }]);
  }
  return { source, files };
}
