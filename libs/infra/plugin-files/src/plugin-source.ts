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
  assertValidPlugin,
  loadPluginTasks,
  pluginTemplate,
} from '@granule/plugin';
import type { TaskDefinition } from '@granule/task-model';
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
      { severity: 'error', code: 'PLUGIN_NOT_FOUND', message: 'no such file or directory', file: source },
    ]);
  if (s.isDirectory()) return new NodePluginFiles(source);
  if (isPackageFile(source)) return readPluginPackage(source, options);
  throw new InvalidInputError([
    {
      severity: 'error',
      code: 'PLUGIN_NOT_FOUND',
      message: 'expected a plugin folder or a .tar.gz package, got a file',
      file: source,
    },
  ]);
}

/**
 * What `granule plan|deploy --plugin DIR|FILE.tar.gz` and `--release DIR` call: validates the
 * plugin or release-as-a-plugin with the plugin validator (an invalid one throws
 * `InvalidInputError` with the validator's report, exactly as `plugin validate` and `plugin
 * install` refuse it), then loads it: selects the release (`options.release` / `os` +
 * `releaseVersion`, else the first) and the Fuel version, applies multi-release selection, and
 * returns `{ name, kind, tasks, graphs, release, diagnostics }` where `tasks` is the
 * `options.graph` graph (default `default`), `graphs` has every graph by type, and
 * `diagnostics` are the validator's warnings and notes.
 */
export async function loadPluginForPlan(
  source: string,
  options: PluginTaskOptions & PackageReadOptions = {},
): Promise<PluginTaskSet> {
  const files = await openPluginSource(source, options);
  const validation = await assertValidPlugin(files);
  const set = await loadPluginTasks(files, options);
  if (set.diagnostics.some((d) => d.severity === 'error')) throw new InvalidInputError(set.diagnostics);
  // The planner's errors then name a plugin task's file as the validator does: under the source.
  const root = source.replace(/\/+$/, '');
  const located = (tasks: TaskDefinition[]): TaskDefinition[] =>
    tasks.map((t) => ({ ...t, source: { ...t.source, file: `${root}/${t.source.file}` } }));
  return {
    ...set,
    tasks: located(set.tasks),
    graphs: Object.fromEntries(Object.entries(set.graphs).map(([type, tasks]) => [type, located(tasks)])),
    diagnostics: validation.diagnostics,
  };
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
