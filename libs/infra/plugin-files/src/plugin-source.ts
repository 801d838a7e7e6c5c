import { mkdir, readdir, stat, writeFile, chmod } from 'node:fs/promises';
import path from 'node:path';
import { InvalidInputError, identifierProblem } from '@granule/core';
import {
  type PluginFiles,
  type PluginTaskOptions,
  type PluginTaskSet,
  PluginError,
  TEMPLATE_NAME_RE,
  type TemplatePackageVersion,
  loadPluginTasks,
  pluginTemplate,
} from '@granule/plugin';
import { NodePluginFiles } from './node-plugin-files';
import { type PackageReadOptions, readPluginPackage } from './plugin-package';

/** True for a path the plan/validate commands treat as a built package. */
export function isPackageFile(source: string): boolean {
  return /\.(tar\.gz|tgz)$/i.test(source);
}

/**
 * Opens a plugin for reading: a directory on disk, or a `.tar.gz`/`.tgz` package read into
 * memory (checked like an extraction: no absolute paths, `..`, outside links, size limit).
 * Throws `InvalidInputError` when the path does not exist.
 */
export async function openPluginSource(source: string, options: PackageReadOptions = {}): Promise<PluginFiles> {
  const s = await stat(source).catch(() => undefined);
  if (!s)
    throw new InvalidInputError([
      { severity: 'error', code: 'PLUGIN_NOT_FOUND', message: `${source} does not exist`, file: source },
    ]);
  if (s.isDirectory()) return new NodePluginFiles(source);
  if (isPackageFile(source)) return readPluginPackage(source, options);
  throw new InvalidInputError([
    {
      severity: 'error',
      code: 'PLUGIN_NOT_FOUND',
      message: `${source} is neither a plugin directory nor a .tar.gz package`,
      file: source,
    },
  ]);
}

/**
 * What `granule plan --plugin DIR|FILE.tar.gz` and `--release DIR` call: loads the plugin or
 * release-as-a-plugin, selects the release (`options.release` / `os` + `releaseVersion`, else
 * the first) and the Fuel version, applies multi-release selection, and returns
 * `{ name, kind, tasks, graphs, release, diagnostics }` where `tasks` is the `options.graph`
 * graph (default `default`) and `graphs` has every graph by type. Throws `InvalidInputError`
 * carrying every diagnostic when any is an error; warnings stay in `diagnostics`.
 */
export async function loadPluginForPlan(
  source: string,
  options: PluginTaskOptions & PackageReadOptions = {},
): Promise<PluginTaskSet> {
  const files = await openPluginSource(source, options);
  const set = await loadPluginTasks(files, options);
  if (set.diagnostics.some((d) => d.severity === 'error')) throw new InvalidInputError(set.diagnostics);
  return set;
}

/**
 * Writes a new plugin from the template into `<parent>/<name>` (which must not exist or be
 * empty). Returns the directory and the files written.
 */
export async function createPluginFromTemplate(
  name: string,
  options: { packageVersion?: TemplatePackageVersion; parent?: string } = {},
): Promise<{ dir: string; files: string[] }> {
  // The plugin name rule every service applies, then Fuel's lower-case convention for new plugins.
  const problem = identifierProblem('pluginName', name);
  if (problem) throw new PluginError('PLUGIN_BAD_NAME', `plugin name: ${problem}`);
  if (!TEMPLATE_NAME_RE.test(name))
    throw new PluginError(
      'PLUGIN_BAD_NAME',
      `plugin name '${name}' is not valid: use lower-case letters, digits, _ and - (e.g. my_plugin)`,
    );
  const dir = path.resolve(options.parent ?? '.', name);
  const existing = await readdir(dir).catch(() => []);
  if (existing.length > 0) throw new PluginError('PLUGIN_TARGET_EXISTS', `${dir} already exists and is not empty`);
  const files = pluginTemplate(name, options.packageVersion ?? '5.0.0');
  const written: string[] = [];
  for (const [rel, content] of Object.entries(files).sort(([a], [b]) => a.localeCompare(b))) {
    const target = path.join(dir, rel);
    if (rel.endsWith('/')) {
      await mkdir(target, { recursive: true });
      continue;
    }
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, content);
    if (rel.endsWith('.sh')) await chmod(target, 0o755);
    written.push(rel);
  }
  return { dir, files: written };
}
