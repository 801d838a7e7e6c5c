import type { Diagnostic } from '@granule/core';
import { ParseResult, TaskDefinition, mergeParseResults, parseTaskData, parseTaskRecords } from '@granule/task-model';
import { formatPath, isPlainObject } from './data-file';
import { LoadContext } from './path-loader';
import { PluginFiles } from './plugin-files.port';
import {
  CONF_KEYS,
  ConfKey,
  LoadedPlugin,
  ReleaseQuery,
  SelectedRelease,
  loadPlugin,
  releaseGraphs,
  releaseOs,
  selectConfVariants,
  selectRelease,
} from './plugin-loader';

/** The standard graph types of a release (seed 003); others are allowed. */
export const STANDARD_GRAPH_TYPES = ['default', 'provisioning', 'deletion', 'network_verification'] as const;

/**
 * What `granule plan` needs from a plugin or a release-as-a-plugin: the plugin name, the tasks
 * of the chosen graph, and every graph by type (`default` always present, maybe empty).
 */
export interface PluginTaskSet {
  name: string;
  kind: 'plugin' | 'release';
  /** Tasks of the chosen graph (`default` unless a graph type was asked for). */
  tasks: TaskDefinition[];
  graphs: Record<string, TaskDefinition[]>;
  /** The release the tasks were chosen for. */
  release: { os?: string; version?: string; name?: string; fuelVersion?: string };
  diagnostics: Diagnostic[];
}

/** Options of {@link loadPluginTasks}: which release, which Fuel version, which graph. */
export interface PluginTaskOptions extends ReleaseQuery {
  /** Graph type for `tasks`; default `default`. */
  graph?: string;
}

/**
 * Parses task records one by one so each keeps its own file, line and key path even when the
 * list was merged from several files (a glob) or sits inside metadata.yaml.
 */
export function parseTaskList(
  ctx: LoadContext,
  records: readonly unknown[],
  fallbackFile: string,
  plugin: string | undefined,
): ParseResult[] {
  return records.map((record, i) => {
    const origin = (typeof record === 'object' && record !== null ? ctx.origins.get(record) : undefined) ?? {
      file: fallbackFile,
      path: [i],
      locate: () => undefined,
    };
    const result = parseTaskRecords([record], origin.file, {
      format: 'deployment-tasks',
      plugin,
      locate: (p) => origin.locate([...origin.path, ...p.slice(1)]),
    });
    const prefix = formatPath(origin.path);
    const diagnostics = result.diagnostics.map((d) =>
      d.path?.startsWith('[0]') ? { ...d, path: `${prefix}${d.path.slice(3)}` } : d,
    );
    return { tasks: result.tasks.map((t) => ({ ...t, source: { ...t.source, index: i } })), diagnostics };
  });
}

/** Parses legacy tasks.yaml records (ids generated as `<plugin>.<stage>.<n>`). */
export function parseLegacyList(
  ctx: LoadContext,
  records: unknown,
  file: string,
  plugin: string | undefined,
): ParseResult {
  const origin = typeof records === 'object' && records !== null ? ctx.origins.get(records) : undefined;
  return parseTaskData(records, origin?.file ?? file, {
    format: 'legacy-tasks',
    plugin,
    scope: plugin,
    locate: origin?.locate,
  });
}

/** Parses node roles: each role's `tasks: [...]` becomes a `type: group` task (seed 001). */
export function parseRoleGroups(
  ctx: LoadContext,
  roles: unknown,
  file: string,
  plugin: string | undefined,
): ParseResult {
  const origin = typeof roles === 'object' && roles !== null ? ctx.origins.get(roles) : undefined;
  return parseTaskData(roles, origin?.file ?? file, { format: 'node-roles', plugin, locate: origin?.locate });
}

/** The configuration of the selected release with variant 1 applied, and its graphs' records. */
export interface EffectiveConf {
  conf: Partial<Record<ConfKey, { file: string; data: unknown }>>;
  graphs: { type: string; records: unknown; file: string }[];
}

/** Applies multi-release selection (seed 001, variant 1) to the selected release's files and graphs. */
export function effectiveConf(plugin: LoadedPlugin, selected: SelectedRelease): EffectiveConf {
  const conf: EffectiveConf['conf'] = {};
  for (const key of CONF_KEYS) {
    const c = selected.release.conf[key];
    if (c) conf[key] = { file: c.file, data: selectConfVariants(plugin.ctx, key, c.data, selected.env) };
  }
  const metaFile = plugin.ctx.origins.get(plugin.metadata)?.file ?? 'metadata.yaml';
  const graphs = releaseGraphs(selected.release).map((g) => {
    const own = typeof g.records === 'object' && g.records !== null ? plugin.ctx.origins.get(g.records) : undefined;
    return {
      type: g.type,
      records: selectConfVariants(plugin.ctx, 'graph', g.records, selected.env),
      file: own?.file ?? metaFile,
    };
  });
  return { conf, graphs };
}

/**
 * The fully loaded data tree `granule plugin load` prints: metadata (without `releases`), the
 * selected `release` record (graphs after selection, configuration keys moved to `files`), the
 * `environment` used, and `files`, the effective configuration of that release.
 */
export function effectiveTree(plugin: LoadedPlugin, selected: SelectedRelease): Record<string, unknown> {
  const { conf, graphs } = effectiveConf(plugin, selected);
  const meta = { ...plugin.metadata };
  delete meta.releases;
  const release: Record<string, unknown> = { ...selected.release.record };
  for (const key of CONF_KEYS) delete release[key];
  if (Array.isArray(release.graphs)) {
    let g = 0;
    release.graphs = release.graphs.map((graph) =>
      isPlainObject(graph) && typeof graph.type === 'string' ? { ...graph, tasks: graphs[g++].records } : graph,
    );
  }
  const files: Record<string, unknown> = {};
  for (const key of CONF_KEYS) if (conf[key]) files[key] = conf[key]?.data;
  const environment: Record<string, unknown> = {
    os: releaseOs(selected.release.record),
    version: selected.release.record.version,
  };
  if (selected.fuelVersion !== undefined) environment.fuel_version = selected.fuelVersion;
  return { ...meta, environment, release, files };
}

const PLUGIN_STAGES = /^(pre_deployment|post_deployment)(\/|$)/;

/** Plugin tasks (not release tasks) may only use the pre/post deployment stages (seed 000). */
export function checkPluginStages(tasks: readonly TaskDefinition[]): Diagnostic[] {
  return tasks
    .filter((t) => t.stage && !PLUGIN_STAGES.test(t.stage.raw))
    .map((t) => {
      const d: Diagnostic = {
        severity: 'error',
        code: 'PLUGIN_BAD_STAGE',
        message: `stage '${t.stage?.raw}' is not available to plugins: use pre_deployment or post_deployment, optionally with a numeric postfix like 'post_deployment/50'`,
        file: t.source.file,
      };
      if (t.source.line) d.line = t.source.line;
      if (!t.generatedId) d.taskId = t.id;
      return d;
    });
}

/**
 * Builds the task graphs of a loaded plugin for a selected release. The `default` graph is the
 * node-role groups, then deployment_tasks, then (4.0.0 only) legacy tasks.yaml, then the
 * release's own `default` graph; other graph types come from the release's `graphs`.
 */
export function buildPluginGraphs(
  plugin: LoadedPlugin,
  selected: SelectedRelease,
): { graphs: Record<string, TaskDefinition[]>; diagnostics: Diagnostic[] } {
  const { conf, graphs } = effectiveConf(plugin, selected);
  const name = plugin.name;
  const parts: Record<string, ParseResult[]> = { default: [] };
  if (conf.node_roles)
    parts.default.push(parseRoleGroups(plugin.ctx, conf.node_roles.data, conf.node_roles.file, name));
  if (Array.isArray(conf.deployment_tasks?.data))
    parts.default.push(...parseTaskList(plugin.ctx, conf.deployment_tasks.data, conf.deployment_tasks.file, name));
  if (plugin.packageVersion === '4.0.0' && conf.tasks && Array.isArray(conf.tasks.data))
    parts.default.push(parseLegacyList(plugin.ctx, conf.tasks.data, conf.tasks.file, name));
  for (const g of graphs) {
    if (!Array.isArray(g.records)) continue;
    (parts[g.type] ??= []).push(...parseTaskList(plugin.ctx, g.records, g.file, name));
  }
  const diagnostics: Diagnostic[] = [];
  const out: Record<string, TaskDefinition[]> = {};
  for (const [type, results] of Object.entries(parts)) {
    const merged = mergeParseResults(results);
    out[type] = merged.tasks;
    diagnostics.push(...merged.diagnostics);
    if (plugin.kind === 'plugin') diagnostics.push(...checkPluginStages(merged.tasks));
  }
  return { graphs: out, diagnostics };
}

/**
 * Loads a plugin (or a release-as-a-plugin) through the port and returns its tasks for one
 * release: see {@link PluginTaskSet}. Every problem is in `diagnostics` (callers decide whether
 * errors stop them; `assertNoErrors`-style). A query that matches no release is an error
 * diagnostic `PLUGIN_NO_SUCH_RELEASE`.
 */
export async function loadPluginTasks(files: PluginFiles, options: PluginTaskOptions = {}): Promise<PluginTaskSet> {
  const plugin = await loadPlugin(files);
  const name = plugin.name ?? files.label;
  const empty: PluginTaskSet = {
    name,
    kind: plugin.kind,
    tasks: [],
    graphs: { default: [] },
    release: {},
    diagnostics: plugin.diagnostics,
  };
  if (plugin.diagnostics.some((d) => d.severity === 'error') && plugin.releases.length === 0) return empty;
  const selected = selectRelease(plugin, options);
  if ('error' in selected) {
    plugin.diagnostics.push({
      severity: 'error',
      code: 'PLUGIN_NO_SUCH_RELEASE',
      message: selected.error,
      file: 'metadata.yaml',
    });
    return empty;
  }
  const built = buildPluginGraphs(plugin, selected);
  const graph = options.graph ?? 'default';
  const diagnostics = [...plugin.diagnostics, ...built.diagnostics];
  if (built.graphs[graph] === undefined) {
    diagnostics.push({
      severity: 'error',
      code: 'PLUGIN_NO_SUCH_GRAPH',
      message: `${name} has no '${graph}' graph; it has: ${Object.keys(built.graphs).join(', ')}`,
      file: 'metadata.yaml',
    });
  }
  const rec = selected.release.record;
  const release: PluginTaskSet['release'] = {};
  const os = releaseOs(rec);
  if (os !== undefined) release.os = os;
  if (typeof rec.version === 'string') release.version = rec.version;
  const relName = rec.release_name ?? rec.name;
  if (typeof relName === 'string') release.name = relName;
  if (selected.fuelVersion !== undefined) release.fuelVersion = selected.fuelVersion;
  return { name, kind: plugin.kind, tasks: built.graphs[graph] ?? [], graphs: built.graphs, release, diagnostics };
}
