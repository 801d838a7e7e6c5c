import path from 'node:path';
import { InvalidInputError } from '@granule/core';
import type { Diagnostic } from '@granule/core';
import { mergeTaskLayers } from '@granule/planner';
import type { PluginTasks } from '@granule/planner';
import type { PackageRef } from '@granule/plugin';
import { mergeParseResults, parseNodesFile, parseTaskData, parseTaskFile } from '@granule/task-model';
import type { ClusterSpec, NodeSpec, ParseResult, TaskDefinition } from '@granule/task-model';
import { expandYamlPaths, parseYamlText, readInputFile, throwOnErrors } from './read-input';
import type { LocalPackages } from './local-packages';
import { releaseFolderOf, type ReleaseFolder } from './release-graphs';

/** `provisioning_graph.yaml` belongs to graph `provisioning`; `deployment_graph.yaml` and all other files to `default`. */
export function graphOfFile(file: string): string {
  const match = /^(.+)_graph\.ya?ml$/.exec(path.basename(file));
  if (!match || match[1] === 'deployment') return 'default';
  return match[1];
}

export interface LoadedTasks {
  /** Tasks per graph type. */
  graphs: Map<string, TaskDefinition[]>;
  warnings: Diagnostic[];
}

/**
 * Reads `--tasks` paths (files or folders of `*.yaml`) into tasks per graph type. A file inside a
 * release folder belongs to the graph the release's metadata.yaml names it in (`tasks_path`); a
 * task file there that no graph names is an error rather than a guess. Other files belong to the
 * graph their name gives ({@link graphOfFile}).
 */
export async function loadTaskPaths(inputs: string[], options: { plugin?: string } = {}): Promise<LoadedTasks> {
  const files = (await Promise.all(inputs.map(expandYamlPaths))).flat();
  const byGraph = new Map<string, ParseResult[]>();
  const releases = new Map<string, Promise<ReleaseFolder | undefined>>();
  const diagnostics: Diagnostic[] = [];
  for (const file of files) {
    const result = parseTaskFile(await readInputFile(file), file, options);
    const release = await releaseFolderOf(file, releases);
    let graph = graphOfFile(file);
    if (release) {
      const declared = release.graphOf.get(path.resolve(file));
      if (declared === undefined) {
        const empty = result.tasks.length === 0 && !result.diagnostics.some((d) => d.severity === 'error');
        if (!empty)
          diagnostics.push({
            severity: 'error',
            code: 'PLAN_FILE_IN_NO_GRAPH',
            file,
            message: `no graph of release '${release.name}' reads this file (${release.declared.join('; ')}): plan the release with --release ${path.relative('.', release.root) || '.'}, or name the file in a graph's tasks_path`,
          });
        continue;
      }
      graph = declared;
    }
    byGraph.set(graph, [...(byGraph.get(graph) ?? []), result]);
  }
  const graphs = new Map<string, TaskDefinition[]>();
  for (const [graph, results] of byGraph) {
    const merged = mergeParseResults(results);
    diagnostics.push(...merged.diagnostics);
    graphs.set(graph, merged.tasks);
  }
  return { graphs, warnings: throwOnErrors(diagnostics) };
}

export async function loadNodes(file: string): Promise<{ nodes: NodeSpec[]; warnings: Diagnostic[] }> {
  const parsed = parseNodesFile(await readInputFile(file), file);
  return { nodes: parsed.nodes, warnings: throwOnErrors(parsed.diagnostics) };
}

/** CLUSTER.yaml: `{status, settings, nodes?, tasks?}`; `tasks` are per-environment overrides. */
export async function loadCluster(
  file: string,
): Promise<{ cluster: ClusterSpec; overrides: TaskDefinition[]; warnings: Diagnostic[] }> {
  const text = await readInputFile(file);
  let data = parseYamlText(text, file, 'CLUSTER_YAML_SYNTAX');
  const diagnostics: Diagnostic[] = [];
  const bad = (p: string, message: string): void => {
    diagnostics.push({ severity: 'error', code: 'CLUSTER_BAD_FIELD', file, path: p, message });
  };
  if (data === null || data === undefined) data = {};
  if (typeof data !== 'object' || Array.isArray(data)) {
    bad(
      '',
      `expected a mapping with status and settings, got ${Array.isArray(data) ? 'a list' : JSON.stringify(data)}`,
    );
    throwOnErrors(diagnostics);
  }
  const doc = data as Record<string, unknown>;
  const status = doc.status ?? 'new';
  if (typeof status !== 'string')
    bad('status', `expected a string such as new or operational, got ${JSON.stringify(status)}`);
  const settings = doc.settings ?? {};
  if (typeof settings !== 'object' || Array.isArray(settings) || settings === null)
    bad('settings', `expected a mapping, got ${JSON.stringify(settings)}`);
  let clusterNodes: NodeSpec[] | undefined;
  if (doc.nodes !== undefined) {
    const parsed = parseNodesFile(text, file);
    diagnostics.push(...parsed.diagnostics);
    clusterNodes = parsed.nodes;
  }
  let overrides: TaskDefinition[] = [];
  if (doc.tasks !== undefined) {
    const parsed = parseTaskData(doc.tasks, file, { format: 'deployment-tasks' });
    diagnostics.push(
      ...parsed.diagnostics.map((d) => ({
        ...d,
        path: d.path ? `tasks${d.path.startsWith('[') ? '' : '.'}${d.path}` : 'tasks',
      })),
    );
    overrides = parsed.tasks;
  }
  const warnings = throwOnErrors(diagnostics);
  return {
    cluster: {
      ...doc,
      status: status as string,
      settings: settings as Record<string, unknown>,
      ...(clusterNodes ? { nodes: clusterNodes } : {}),
    },
    overrides,
    warnings,
  };
}

// Plugin loading pulls in tar and glob code: load it only when a plugin or release is given.
const pluginLibs = async () => ({ ...(await import('@granule/plugin')), ...(await import('@granule/plugin-files')) });

/** The tasks, each naming the package its relative paths belong to (ADR 0026). */
async function marked(tasks: TaskDefinition[], ref: PackageRef | undefined): Promise<TaskDefinition[]> {
  return ref ? (await pluginLibs()).markPackageTasks(tasks, ref) : tasks;
}

/**
 * A plugin folder or package (`.tar.gz`): its name and its default graph's tasks, fully loaded
 * and validated; tasks whose paths are relative to its deployment files name its package.
 */
export async function loadPlugin(
  source: string,
  packages: LocalPackages,
): Promise<{ plugin: PluginTasks; warnings: Diagnostic[] }> {
  const set = await (await pluginLibs()).loadPluginForPlan(source);
  const ref = await packages.refOf(source, set.name);
  return {
    plugin: { name: set.name, tasks: await marked(set.tasks, ref) },
    warnings: set.diagnostics.filter((d) => d.severity === 'warning'),
  };
}

/** A release-as-a-plugin folder or package: every graph it defines. */
export async function loadReleasePlugin(source: string, packages: LocalPackages): Promise<LoadedTasks> {
  const set = await (await pluginLibs()).loadPluginForPlan(source);
  const ref = await packages.refOf(source, set.name);
  const graphs = await Promise.all(
    Object.entries(set.graphs).map(async ([graph, tasks]) => [graph, await marked(tasks, ref)] as const),
  );
  return {
    graphs: new Map(graphs),
    warnings: set.diagnostics.filter((d) => d.severity === 'warning'),
  };
}

/** Picks one graph's tasks from release + plugins + cluster layers, naming the graphs there are. */
export function selectGraph(
  release: LoadedTasks,
  graph: string,
  plugins: PluginTasks[],
  overrides: TaskDefinition[],
): { tasks: TaskDefinition[]; warnings: Diagnostic[] } {
  const available = [...release.graphs.keys()];
  if (!release.graphs.has(graph) && !(graph === 'default' && available.length === 0)) {
    throw new InvalidInputError([
      {
        severity: 'error',
        code: 'PLAN_UNKNOWN_GRAPH',
        message: `--graph ${graph}: the tasks define no such graph (available: ${available.sort().join(', ') || 'none'})`,
      },
    ]);
  }
  const merged = mergeTaskLayers({
    release: release.graphs.get(graph) ?? [],
    plugins: graph === 'default' ? plugins : [],
    cluster: graph === 'default' ? overrides : [],
  });
  return { tasks: merged.tasks, warnings: throwOnErrors(merged.diagnostics) };
}
