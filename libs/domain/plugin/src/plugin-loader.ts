import type { Diagnostic } from '@granule/core';
import { describeValue, isPlainObject } from './data-file';
import { LoadContext, Origin, deepMerge, resolvePathKeys } from './path-loader';
import { PluginFiles, normalizePluginPath } from './plugin-files.port';
import { VariantEnvironment, selectRoleVariants, selectVariants } from './variant-selection';
import { ParsedVersion, compareVersions, parseVersion } from './version-compare';

/**
 * The configuration files of a plugin, by key. Each is `<key>.yaml` (or `.yml`) in the plugin
 * root, in a release's `conf_path` folder, or named by a release's `<key>_path`.
 */
export const CONF_KEYS = [
  'environment_config',
  'node_roles',
  'volumes',
  'network_roles',
  'components',
  'deployment_tasks',
  'tasks',
  'node_attributes',
  'nic_attributes',
  'bond_attributes',
] as const;
export type ConfKey = (typeof CONF_KEYS)[number];

/** Package versions read in full, and those recognised but refused. */
export const SUPPORTED_PACKAGE_VERSIONS = ['4.0.0', '5.0.0'] as const;
export const UNSUPPORTED_PACKAGE_VERSIONS = ['1.0.0', '2.0.0', '3.0.0'] as const;

/** One configuration file's data and where it came from. */
export interface ConfData {
  /** The file it was read from (plugin-relative), or the metadata key path it was loaded into. */
  file: string;
  data: unknown;
}

/** A release record of metadata.yaml after `_path` processing and the base-release merge. */
export interface LoadedRelease {
  index: number;
  record: Record<string, unknown>;
  /** True for `is_release: true` (release as a plugin, seed 003). */
  isRelease: boolean;
  /** Configuration files for this release (variants 2 and 3 of seed 001), root files as fallback. */
  conf: Partial<Record<ConfKey, ConfData>>;
}

/** A plugin directory read through the port: metadata, releases, configuration files. */
export interface LoadedPlugin {
  files: PluginFiles;
  /** metadata.yaml as written (`null` when missing or unreadable). */
  rawMetadata: Record<string, unknown> | null;
  /** metadata.yaml after `_path` processing; releases merged with their base. */
  metadata: Record<string, unknown>;
  name?: string;
  packageVersion?: string;
  /** `release` when any release record has `is_release: true`. */
  kind: 'plugin' | 'release';
  releases: LoadedRelease[];
  /** Configuration files found in the plugin root. */
  root: Partial<Record<ConfKey, ConfData>>;
  /** The shared load state: origins of loaded objects (for file:line in messages). */
  ctx: LoadContext;
  diagnostics: Diagnostic[];
}

/** Which release of the plugin a load is for, and the Fuel version. */
export interface ReleaseQuery {
  /** `release_name` (or `name`) of a release record. */
  release?: string;
  /** `os` / `operating_system` of a release record. */
  os?: string;
  /** `version` of a release record (`mitaka-10.0`). */
  releaseVersion?: string;
  /** The Fuel version to match `fuel-version` constraints against. */
  fuelVersion?: string;
}

/** The release a query selected and the environment records are chosen for. */
export interface SelectedRelease {
  release: LoadedRelease;
  env: VariantEnvironment;
  /** The fuel version used, as text (from the query or the highest of metadata `fuel_version`). */
  fuelVersion?: string;
}

async function findRootFile(files: PluginFiles, dir: string, key: string): Promise<string | undefined> {
  for (const ext of ['yaml', 'yml', 'json']) {
    const path = dir === '' ? `${key}.${ext}` : `${dir}/${key}.${ext}`;
    if ((await files.stat(path)) === 'file') return path;
  }
  return undefined;
}

async function loadConf(ctx: LoadContext, path: string): Promise<ConfData | undefined> {
  const loaded = await ctx.readData(path);
  if (!loaded || loaded.diagnostics.some((d) => d.severity === 'error')) return undefined;
  const origin = ctx.origins.get(loaded.data as object) ?? { file: path, path: [], locate: loaded.locate };
  return { file: path, data: await resolvePathKeys(ctx, loaded.data, origin, [path]) };
}

/**
 * Reads a plugin through the port: metadata.yaml with every `_path` key processed (seed 003),
 * each release merged over its `base_release_path` tree, and the configuration files of the
 * root and of each release (a release's `<key>_path`, then its `conf_path` folder, then the
 * root). Problems are collected in `diagnostics`; nothing throws for bad content.
 */
export async function loadPlugin(files: PluginFiles): Promise<LoadedPlugin> {
  const ctx = new LoadContext(files);
  const result: LoadedPlugin = {
    files,
    rawMetadata: null,
    metadata: {},
    kind: 'plugin',
    releases: [],
    root: {},
    ctx,
    diagnostics: ctx.diagnostics,
  };
  const metaPath = await findRootFile(files, '', 'metadata');
  if (!metaPath) {
    ctx.diagnostics.push({
      severity: 'error',
      code: 'PLUGIN_NO_METADATA',
      message: `no such file: a plugin (or release) folder has a metadata.yaml at its top`,
      file: 'metadata.yaml',
    });
    return result;
  }
  const meta = await ctx.readData(metaPath);
  if (!meta || meta.diagnostics.some((d) => d.severity === 'error')) return result;
  if (!isPlainObject(meta.data)) {
    ctx.diagnostics.push({
      severity: 'error',
      code: 'PLUGIN_BAD_FIELD',
      message: `expected a mapping of plugin fields, got ${describeValue(meta.data)}`,
      file: metaPath,
      line: 1,
    });
    return result;
  }
  result.rawMetadata = meta.data;
  if (typeof meta.data.name === 'string') result.name = meta.data.name;
  if (meta.data.package_version !== undefined) result.packageVersion = String(meta.data.package_version);
  const metaOrigin: Origin = ctx.origins.get(meta.data) ?? { file: metaPath, path: [], locate: meta.locate };

  for (const key of CONF_KEYS) {
    const path = await findRootFile(files, '', key);
    if (!path) continue;
    const conf = await loadConf(ctx, path);
    if (conf) result.root[key] = conf;
  }

  const processed = (await resolvePathKeys(ctx, meta.data, metaOrigin)) as Record<string, unknown>;
  const releases = Array.isArray(processed.releases) ? processed.releases : [];
  const merged: unknown[] = [];
  for (let index = 0; index < releases.length; index++) {
    const raw = releases[index];
    if (!isPlainObject(raw)) {
      merged.push(raw);
      continue;
    }
    const origin = ctx.origins.get(raw);
    let record: Record<string, unknown> = raw;
    if ('base_release' in raw) {
      const { base_release: base, ...rest } = raw;
      if (isPlainObject(base)) record = deepMerge(base, rest) as Record<string, unknown>;
      else
        ctx.report(
          'error',
          'PLUGIN_BAD_FIELD',
          origin,
          ['base_release_path'],
          `the base release must be a data file holding a mapping, got ${describeValue(base)}`,
        );
      if (origin) ctx.origins.set(record, origin);
    } else if (typeof raw.base_release_path === 'string') {
      ctx.report(
        'error',
        'PLUGIN_BAD_FIELD',
        origin,
        ['base_release_path'],
        `${raw.base_release_path} must be a YAML or JSON file holding the base release`,
      );
    }
    merged.push(record);
    result.releases.push({
      index,
      record,
      isRelease: record.is_release === true,
      conf: await releaseConf(ctx, record, result.root),
    });
  }
  result.metadata = { ...processed, releases: merged };
  ctx.origins.set(result.metadata, metaOrigin);
  if (result.releases.some((r) => r.isRelease)) result.kind = 'release';
  return result;
}

async function releaseConf(
  ctx: LoadContext,
  record: Record<string, unknown>,
  root: LoadedPlugin['root'],
): Promise<LoadedRelease['conf']> {
  const conf: LoadedRelease['conf'] = {};
  const confDir = typeof record.conf_path === 'string' ? normalizePluginPath(record.conf_path) : undefined;
  const origin = ctx.origins.get(record);
  for (const key of CONF_KEYS) {
    if (record[key] !== undefined) {
      const own = ctx.origins.get(record[key] as object);
      conf[key] = { file: own?.file ?? origin?.file ?? 'metadata.yaml', data: record[key] };
      continue;
    }
    if (confDir !== undefined && confDir !== '') {
      const path = await findRootFile(ctx.files, confDir, key);
      const loaded = path ? await loadConf(ctx, path) : undefined;
      if (loaded) {
        conf[key] = loaded;
        continue;
      }
    }
    if (root[key]) conf[key] = root[key];
  }
  return conf;
}

const releaseLabel = (r: LoadedRelease): string => {
  const rec = r.record;
  const name = rec.release_name ?? rec.name;
  const os = rec.operating_system ?? rec.os;
  return `${name !== undefined ? `${String(name)} ` : ''}(${String(os)} ${String(rec.version)})`;
};

/** `os` or its alias `operating_system`. */
export function releaseOs(record: Record<string, unknown>): string | undefined {
  const os = record.operating_system ?? record.os;
  return typeof os === 'string' ? os : undefined;
}

/**
 * Picks the release a query names: by `release_name`/`name`, by `os` + `version`, or the first
 * release when the query names none. The Fuel version is the query's, else the highest entry
 * of metadata `fuel_version`, else unknown (then `fuel-version` constraints hold).
 * Returns an error message when nothing matches.
 */
export function selectRelease(plugin: LoadedPlugin, query: ReleaseQuery = {}): SelectedRelease | { error: string } {
  const all = plugin.releases;
  if (all.length === 0) return { error: `releases: the plugin declares no release` };
  let matches = all;
  if (query.release !== undefined)
    matches = matches.filter((r) => r.record.release_name === query.release || r.record.name === query.release);
  if (query.os !== undefined) matches = matches.filter((r) => releaseOs(r.record) === query.os);
  if (query.releaseVersion !== undefined) {
    const text = (r: LoadedRelease): string => String(r.record.version);
    const exact = matches.filter((r) => text(r) === query.releaseVersion);
    // Only when no release is written exactly so, compare by the version rule (8 = 8.0).
    const wanted = parseVersion(query.releaseVersion);
    matches =
      exact.length > 0
        ? exact
        : matches.filter((r) => {
            const parsed = parseVersion(text(r));
            return wanted !== undefined && parsed !== undefined && compareVersions(parsed, wanted) === 0;
          });
  }
  if (matches.length === 0) {
    return { error: `no release matches ${describeQuery(query)}; the plugin has: ${all.map(releaseLabel).join(', ')}` };
  }
  const release = matches[0];
  let fuelVersion = query.fuelVersion;
  const declared = plugin.metadata.fuel_version;
  if (fuelVersion === undefined && Array.isArray(declared)) {
    const versions = declared
      .map(String)
      .map((v) => ({ v, p: parseVersion(v) }))
      .filter((x): x is { v: string; p: ParsedVersion } => x.p !== undefined);
    versions.sort((a, b) => compareVersions(b.p, a.p));
    fuelVersion = versions[0]?.v;
  }
  const env: VariantEnvironment = {};
  const osVersion = typeof release.record.version === 'string' ? parseVersion(release.record.version) : undefined;
  if (osVersion) env.osVersion = osVersion;
  if (fuelVersion !== undefined) {
    const parsed = parseVersion(fuelVersion);
    if (!parsed) return { error: `--fuel-version ${fuelVersion}: expected a version like 9.1` };
    env.fuelVersion = parsed;
  }
  return fuelVersion === undefined ? { release, env } : { release, env, fuelVersion };
}

function describeQuery(q: ReleaseQuery): string {
  const parts: string[] = [];
  if (q.release !== undefined) parts.push(`release '${q.release}'`);
  if (q.os !== undefined) parts.push(`os '${q.os}'`);
  if (q.releaseVersion !== undefined) parts.push(`version '${q.releaseVersion}'`);
  return parts.join(', ');
}

/** Keys list records are grouped by, per configuration file (variant 1). */
const RECORD_KEY: Partial<Record<ConfKey, string>> = {
  deployment_tasks: 'id',
  network_roles: 'id',
  components: 'name',
};

/**
 * Applies variant 1 (seed 001) to one configuration file's data for an environment: tasks and
 * network roles grouped by `id`, components by `name`, `volumes.volumes` by `id`, node roles by
 * role name; legacy tasks.yaml records are kept when satisfied.
 */
export function selectConfVariants(
  ctx: LoadContext,
  key: ConfKey | 'graph',
  data: unknown,
  env: VariantEnvironment,
): unknown {
  const report = (record: Record<string, unknown>, k: string, message: string): void => {
    ctx.report('error', 'PLUGIN_BAD_VERSION_CONSTRAINT', ctx.origins.get(record), [k], message);
  };
  const copied = (from: Record<string, unknown>, to: Record<string, unknown>): void => {
    const o = ctx.origins.get(from);
    if (o) ctx.origins.set(to, o);
  };
  const byField = (field: string) => (r: Record<string, unknown>) =>
    typeof r[field] === 'string' ? (r[field] as string) : undefined;
  if (key === 'node_roles') return isPlainObject(data) ? selectRoleVariants(data, env, report, copied) : data;
  if (key === 'volumes' && isPlainObject(data) && Array.isArray(data.volumes)) {
    return { ...data, volumes: selectVariants(data.volumes, byField('id'), env, report, copied) };
  }
  if (!Array.isArray(data)) return data;
  if (key === 'tasks') return selectVariants(data, () => undefined, env, report, copied);
  return selectVariants(data, byField(key === 'graph' ? 'id' : (RECORD_KEY[key] ?? 'id')), env, report, copied);
}

/** A release's graphs as `type` → task records (after `tasks_path` loading), in declaration order. */
export function releaseGraphs(release: LoadedRelease): { type: string; records: unknown; index: number }[] {
  const graphs = release.record.graphs;
  if (!Array.isArray(graphs)) return [];
  return graphs.flatMap((g, index) =>
    isPlainObject(g) && typeof g.type === 'string' ? [{ type: g.type, records: g.tasks, index }] : [],
  );
}
