import { InvalidInputError } from '@granule/core';
import type { Diagnostic } from '@granule/core';
import {
  CONF_KEYS,
  markPackageTasks,
  assertValidPlugin,
  loadPlugin,
  loadPluginTasks,
  releaseOs,
} from '@granule/plugin';
import type { PackageRef, PluginFiles, PluginTaskOptions } from '@granule/plugin';
import type { GraphRecords } from './config-model';
import { toGraphRecords } from './task-record';

/** A release a release plugin defines (seed 003: `is_release: true`), ready to store. */
export interface PreparedRelease {
  name: string;
  version: string;
  operatingSystem: string;
  description?: string;
  /** The release record without its graphs and configuration files (roles, attributes, ...). */
  attributes: Record<string, unknown>;
  graphs: GraphRecords;
}

/** One release a plugin supports (`os` + `version`), with the plugin's graphs for it. */
export interface PreparedPluginRelease {
  os: string;
  version: string;
  graphs: GraphRecords;
}

/** A validated plugin or release plugin and everything the config-store keeps of it. */
export interface PreparedPlugin {
  kind: 'plugin' | 'release';
  name: string;
  version: string;
  packageVersion: string;
  title?: string;
  description?: string;
  isHotpluggable: boolean;
  /** Plugins: the releases it extends. */
  pluginReleases: PreparedPluginRelease[];
  /** Release plugins: the releases it defines. */
  releases: PreparedRelease[];
  /** Warnings and notes of validation; errors never get here. */
  warnings: Diagnostic[];
  /** The SHA-256 (hex) of its deployment files, when they were stored. */
  artifactDigest?: string;
}

const text = (v: unknown): string | undefined =>
  typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined;

async function graphsFor(
  files: PluginFiles,
  query: PluginTaskOptions,
  pkg: PackageRef | undefined,
): Promise<GraphRecords> {
  // The validator already reported every warning; only a release the query cannot select is new here.
  const set = await loadPluginTasks(files, query);
  if (set.diagnostics.some((d) => d.severity === 'error')) throw new InvalidInputError(set.diagnostics);
  return toGraphRecords(
    Object.fromEntries(Object.entries(set.graphs).map(([type, tasks]) => [type, markPackageTasks(tasks, pkg)])),
  );
}

/**
 * Validates a plugin (folder or package, read through the port) with `assertValidPlugin` and
 * loads its tasks for every release it names. Throws `InvalidInputError` with every problem
 * when anything is wrong, so nothing is stored for an invalid plugin. With `artifactDigest`
 * (its deployment files, stored under that SHA-256), every task whose paths are relative to
 * the package names it (`$package`: the plugin's name, version and the digest; ADR 0026).
 */
export async function preparePlugin(
  files: PluginFiles,
  options: { artifactDigest?: string } = {},
): Promise<PreparedPlugin> {
  const validation = await assertValidPlugin(files);
  const warnings = validation.diagnostics.filter((d) => d.severity !== 'error');
  const loaded = await loadPlugin(files);
  const meta = loaded.metadata;
  const prepared: PreparedPlugin = {
    kind: loaded.kind,
    name: loaded.name ?? files.label,
    version: text(meta.version) ?? '0.0.0',
    packageVersion: loaded.packageVersion ?? '',
    isHotpluggable: meta.is_hotpluggable === true,
    pluginReleases: [],
    releases: [],
    warnings,
  };
  if (options.artifactDigest !== undefined) prepared.artifactDigest = options.artifactDigest;
  const pkg: PackageRef | undefined =
    options.artifactDigest === undefined
      ? undefined
      : { name: prepared.name, version: prepared.version, digest: options.artifactDigest };
  if (text(meta.title) !== undefined) prepared.title = text(meta.title);
  if (text(meta.description) !== undefined) prepared.description = text(meta.description);

  for (const r of loaded.releases) {
    const rec = r.record;
    const os = releaseOs(rec) ?? '';
    const version = text(rec.version) ?? '';
    if (loaded.kind === 'release') {
      if (!r.isRelease) continue;
      const name = text(rec.release_name) ?? text(rec.name) ?? prepared.name;
      const attributes: Record<string, unknown> = { ...rec };
      for (const key of [
        ...CONF_KEYS,
        'graphs',
        'release_name',
        'version',
        'description',
        'operating_system',
        'os',
        'is_release',
      ])
        delete attributes[key];
      const release: PreparedRelease = {
        name,
        version,
        operatingSystem: os,
        attributes,
        graphs: await graphsFor(files, { release: name }, pkg),
      };
      if (text(rec.description) !== undefined) release.description = text(rec.description);
      prepared.releases.push(release);
    } else if (!prepared.pluginReleases.some((p) => p.os === os && p.version === version)) {
      prepared.pluginReleases.push({
        os,
        version,
        graphs: await graphsFor(files, { os, releaseVersion: version }, pkg),
      });
    }
  }
  return prepared;
}
