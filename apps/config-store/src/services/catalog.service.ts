import type { DataSource, EntityManager } from 'typeorm';
import { In } from 'typeorm';
import {
  INPUT_LIMITS,
  InvalidInputError,
  identifierProblem,
  jsonBytes,
  overLimitMessage,
  utf8Bytes,
} from '@granule/core';
import type { Diagnostic } from '@granule/core';
import { ConfigStoreError, preparePlugin } from '@granule/config-model';
import type { GraphRecords, PreparedPlugin } from '@granule/config-model';
import type { InstallResult, PluginView, ReleaseView } from '@granule/contracts';
import { ArtifactError, storePluginArtifact } from '@granule/artifacts';
import type { ArtifactStore } from '@granule/artifacts';
import { MemoryPluginFiles } from '@granule/plugin';
import type { PluginFiles } from '@granule/plugin';
import {
  EnvironmentEntity,
  EnvironmentPluginEntity,
  PluginEntity,
  ReleaseEntity,
  StoreFlagEntity,
} from '../persistence/config-store.entities';
import { findPlugin, findRelease, mapDatabaseError } from './lookups';
import { recordArtifactRemoval } from './artifact-retention';
import { SecretSealing } from './secret-sealing';
import { pluginView, releaseView } from './views';

/** Flag set once the basic release was pre-installed, so removing it is final. */
export const PREINSTALLED_RELEASE_FLAG = 'preinstalled_release';

/**
 * Turns an install request's file map into the plugin port, refusing paths that leave the
 * plugin root and non-text contents (every bad entry is named).
 */
export function pluginFilesFromMap(files: Record<string, unknown>, source: string): PluginFiles {
  const diagnostics: Diagnostic[] = [];
  const entries: Record<string, string> = {};
  for (const [path, content] of Object.entries(files)) {
    if (typeof content !== 'string')
      diagnostics.push({
        severity: 'error',
        code: 'CONFIG_BAD_FIELD',
        path: `files.${path}`,
        message: `expected the file's text, got ${content === null ? 'null' : typeof content}`,
      });
    else if (path.startsWith('/') || path.split('/').includes('..') || path.includes('\\'))
      diagnostics.push({
        severity: 'error',
        code: 'CONFIG_BAD_FIELD',
        path: `files.${path}`,
        message: 'expected a path inside the plugin (relative, without ..)',
      });
    else entries[path] = content;
  }
  if (Object.keys(files).length === 0)
    diagnostics.push({
      severity: 'error',
      code: 'CONFIG_BAD_FIELD',
      path: 'files',
      message: 'expected the plugin files, got none',
    });
  if (diagnostics.length > 0) throw new InvalidInputError(diagnostics);
  return new MemoryPluginFiles(entries, source);
}

/**
 * What a prepared plugin would store, against the identifier rules and size bounds: names
 * (plugin, releases) and each graph's task count and size. Every problem is named.
 */
export function checkPreparedPlugin(prepared: PreparedPlugin, source: string): void {
  const diagnostics: Diagnostic[] = [];
  const nameProblem = identifierProblem('pluginName', prepared.name);
  if (nameProblem)
    diagnostics.push({
      severity: 'error',
      code: 'INVALID_IDENTIFIER',
      file: source,
      path: 'name',
      message: nameProblem,
    });
  const text = (path: string, value: string | undefined): void => {
    if (value !== undefined && utf8Bytes(value) > INPUT_LIMITS.fieldBytes)
      diagnostics.push({
        severity: 'error',
        code: 'INPUT_TOO_LARGE',
        file: source,
        path,
        message: overLimitMessage(INPUT_LIMITS.fieldBytes, utf8Bytes(value), 'bytes'),
      });
  };
  text('title', prepared.title);
  text('description', prepared.description);
  prepared.releases.forEach((r, i) => text(`releases[${i}].description`, r.description));
  const graphs: Array<[string, GraphRecords]> = [];
  prepared.releases.forEach((r, i) => {
    const problem = identifierProblem('releaseName', r.name);
    if (problem)
      diagnostics.push({
        severity: 'error',
        code: 'INVALID_IDENTIFIER',
        file: source,
        path: `releases[${i}].release_name`,
        message: problem,
      });
    if (jsonBytes(r.attributes) > INPUT_LIMITS.releaseAttributesJsonBytes)
      diagnostics.push({
        severity: 'error',
        code: 'INPUT_TOO_LARGE',
        file: source,
        path: `releases[${i}]`,
        message: `the release's attributes: ${overLimitMessage(INPUT_LIMITS.releaseAttributesJsonBytes, jsonBytes(r.attributes), 'bytes', 'as JSON')}`,
      });
    graphs.push([`releases[${i}]`, r.graphs]);
  });
  prepared.pluginReleases.forEach((r, i) => graphs.push([`releases[${i}]`, r.graphs]));
  for (const [at, byType] of graphs) {
    for (const [type, records] of Object.entries(byType)) {
      const path = `${at}.graphs.${type}`;
      if (records.length > INPUT_LIMITS.tasksPerGraph)
        diagnostics.push({
          severity: 'error',
          code: 'INPUT_TOO_LARGE',
          file: source,
          path,
          message: overLimitMessage(INPUT_LIMITS.tasksPerGraph, records.length, 'tasks'),
        });
      else if (jsonBytes(records) > INPUT_LIMITS.graphJsonBytes)
        diagnostics.push({
          severity: 'error',
          code: 'INPUT_TOO_LARGE',
          file: source,
          path,
          message: overLimitMessage(INPUT_LIMITS.graphJsonBytes, jsonBytes(records), 'bytes', 'as JSON'),
        });
    }
  }
  if (diagnostics.length > 0) throw new InvalidInputError(diagnostics);
}

/** Releases and plugins: install (validated first), list, show, remove. */
export class CatalogService {
  constructor(
    private readonly ds: DataSource,
    private readonly sealing = new SecretSealing(),
    /** The artifacts bucket; without it (tests of the catalog alone) deployment files are refused. */
    private readonly artifacts?: ArtifactStore,
  ) {}

  async listReleases(): Promise<ReleaseView[]> {
    return (await this.ds.getRepository(ReleaseEntity).find({ order: { id: 'ASC' } })).map(releaseView);
  }

  async getRelease(ref: string): Promise<ReleaseView> {
    return releaseView(await findRelease(this.ds.manager, ref));
  }

  async removeRelease(ref: string): Promise<ReleaseView> {
    return this.ds.transaction(async (em) => {
      const release = await findRelease(em, ref);
      const users = await em
        .getRepository(EnvironmentEntity)
        .find({ where: { releaseId: release.id }, order: { id: 'ASC' } });
      if (users.length > 0) {
        throw new ConfigStoreError(
          'CONFIG_IN_USE',
          `release '${release.name}' (id ${release.id}) is used by environment${users.length > 1 ? 's' : ''} ${users.map((e) => `'${e.name}'`).join(', ')}: an environment keeps its release`,
        );
      }
      await em.getRepository(ReleaseEntity).delete({ id: release.id });
      await recordArtifactRemoval(em, release.artifactDigest);
      return releaseView(release);
    });
  }

  async listPlugins(): Promise<PluginView[]> {
    const plugins = await this.ds.getRepository(PluginEntity).find({ order: { id: 'ASC' } });
    const links = await this.ds.getRepository(EnvironmentPluginEntity).find({ order: { environmentId: 'ASC' } });
    return plugins.map((p) =>
      pluginView(
        p,
        links.filter((l) => l.pluginId === p.id).map((l) => l.environmentId),
      ),
    );
  }

  async getPlugin(ref: string): Promise<PluginView> {
    const plugin = await findPlugin(this.ds.manager, ref);
    return pluginView(plugin, await this.environmentsOf(this.ds.manager, plugin.id));
  }

  async removePlugin(ref: string): Promise<PluginView> {
    return this.ds.transaction(async (em) => {
      const plugin = await findPlugin(em, ref);
      const envIds = await this.environmentsOf(em, plugin.id);
      if (envIds.length > 0) {
        const envs = await em
          .getRepository(EnvironmentEntity)
          .find({ where: { id: In(envIds) }, order: { id: 'ASC' } });
        const names = envs.map((e) => `'${e.name}'`).join(', ');
        throw new ConfigStoreError(
          'CONFIG_IN_USE',
          `plugin '${plugin.name}' is enabled in environment${envs.length > 1 ? 's' : ''} ${names}: disable it there first (granule plugin disable ${plugin.name} --env ${envs[0].name})`,
        );
      }
      await em.getRepository(PluginEntity).delete({ id: plugin.id });
      await recordArtifactRemoval(em, plugin.artifactDigest);
      return pluginView(plugin, []);
    });
  }

  /**
   * Validates and installs a plugin (`expected: 'plugin'`) or a release plugin (`'release'`),
   * all in one transaction: either every release of the package is stored or none.
   */
  async install(
    files: PluginFiles,
    source: string,
    expected: 'plugin' | 'release',
    artifact?: { digest: string; size?: number },
  ): Promise<InstallResult> {
    if (artifact) await this.checkArtifact(artifact, source);
    const prepared = this.sealPrepared(
      await preparePlugin(files, artifact ? { artifactDigest: artifact.digest } : {}),
      source,
    );
    checkPreparedPlugin(prepared, source);
    if (prepared.kind !== expected) {
      throw new ConfigStoreError(
        'CONFIG_WRONG_KIND',
        prepared.kind === 'release'
          ? `${source} is a release plugin (a release has is_release: true): install it with granule release install ${source}`
          : `${source} defines no release (no release record has is_release: true): install it as a plugin with granule plugin install ${source}`,
      );
    }
    try {
      return await this.ds.transaction(async (em) => {
        if (expected === 'release') {
          const releases: ReleaseView[] = [];
          for (const r of prepared.releases) {
            const existing = await em.getRepository(ReleaseEntity).findOneBy({ name: r.name, version: r.version });
            if (existing) {
              throw new ConfigStoreError(
                'CONFIG_ALREADY_EXISTS',
                `release '${r.name}' version ${r.version} is already installed (id ${existing.id}); remove it first with granule release remove ${existing.id}`,
              );
            }
            const saved = await em.getRepository(ReleaseEntity).save(
              em.getRepository(ReleaseEntity).create({
                name: r.name,
                version: r.version,
                operatingSystem: r.operatingSystem,
                description: r.description ?? null,
                pluginName: prepared.name,
                pluginVersion: prepared.version,
                attributes: r.attributes,
                graphs: r.graphs,
                artifactDigest: prepared.artifactDigest ?? null,
              }),
            );
            releases.push(releaseView(saved));
          }
          return { kind: 'release', releases, warnings: prepared.warnings };
        }
        const existing = await em
          .getRepository(PluginEntity)
          .findOneBy({ name: prepared.name, version: prepared.version });
        if (existing) {
          throw new ConfigStoreError(
            'CONFIG_ALREADY_EXISTS',
            `plugin '${prepared.name}' version ${prepared.version} is already installed (id ${existing.id}); remove it first with granule plugin remove ${existing.id}`,
          );
        }
        const saved = await em.getRepository(PluginEntity).save(
          em.getRepository(PluginEntity).create({
            name: prepared.name,
            version: prepared.version,
            packageVersion: prepared.packageVersion,
            title: prepared.title ?? null,
            description: prepared.description ?? null,
            isHotpluggable: prepared.isHotpluggable,
            releases: prepared.pluginReleases,
            source,
            artifactDigest: prepared.artifactDigest ?? null,
          }),
        );
        return { kind: 'plugin', plugin: pluginView(saved, []), releases: [], warnings: prepared.warnings };
      });
    } catch (err) {
      throw mapDatabaseError(err, `${prepared.kind} '${prepared.name}' version ${prepared.version}`);
    }
  }

  /**
   * Reads the stored deployment files an install names in full and checks them against their
   * digest, so a plugin is never recorded with files the agents could not fetch.
   */
  private async checkArtifact(artifact: { digest: string; size?: number }, source: string): Promise<void> {
    if (!this.artifacts)
      throw new ArtifactError(
        'ARTIFACT_UNREADABLE',
        `${source}: this config-store keeps no deployment files (it has no artifacts bucket)`,
      );
    const found = await this.artifacts.read(artifact.digest, async () => undefined);
    if (artifact.size !== undefined && found.size !== artifact.size)
      throw new ArtifactError(
        'ARTIFACT_DAMAGED',
        `${source}: the stored deployment files are ${found.size} bytes, not ${artifact.size}: install again`,
      );
  }

  /**
   * Installs the basic release once (seed 003: shipped pre-installed, removable). Returns what
   * happened, for the start-up log; a removed basic release is not installed again.
   */
  async preinstallRelease(open: () => Promise<PluginFiles>, source: string): Promise<string> {
    const flags = this.ds.getRepository(StoreFlagEntity);
    if (await flags.findOneBy({ name: PREINSTALLED_RELEASE_FLAG })) return 'basic release: pre-installed earlier';
    let message: string;
    try {
      const artifact = this.artifacts ? await storePluginArtifact(this.artifacts, source) : undefined;
      const result = await this.install(await open(), source, 'release', artifact);
      message = `basic release: installed ${result.releases.map((r) => `${r.name} ${r.version} (id ${r.id})`).join(', ')} from ${source}`;
    } catch (err) {
      if (!(err instanceof ConfigStoreError && err.code === 'CONFIG_ALREADY_EXISTS')) throw err;
      message = `basic release: already installed`;
    }
    await flags.save(flags.create({ name: PREINSTALLED_RELEASE_FLAG, value: { source } }));
    return message;
  }

  /** The prepared plugin with every secret of its graphs and release attributes sealed (or all refused at once). */
  private sealPrepared(prepared: PreparedPlugin, source: string): PreparedPlugin {
    const refused: Diagnostic[] = [];
    const sealed = <T>(value: T, seal: (v: T) => T): T => {
      try {
        return seal(value);
      } catch (err) {
        if (!(err instanceof InvalidInputError)) throw err;
        refused.push(...err.diagnostics);
        return value;
      }
    };
    const graphs = (byType: GraphRecords, at: (string | number)[]): GraphRecords =>
      Object.fromEntries(
        Object.entries(byType).map(([type, records]) => [
          type,
          sealed(records, (r) => this.sealing.tasks(r, { file: source, prefix: [...at, 'graphs', type] })),
        ]),
      );
    const out: PreparedPlugin = {
      ...prepared,
      releases: prepared.releases.map((r, i) => ({
        ...r,
        attributes: sealed(r.attributes, (a) => this.sealing.data(a, { file: source, prefix: ['releases', i] })),
        graphs: graphs(r.graphs, ['releases', i]),
      })),
      pluginReleases: prepared.pluginReleases.map((r, i) => ({ ...r, graphs: graphs(r.graphs, ['releases', i]) })),
    };
    if (refused.length > 0) throw new InvalidInputError(refused);
    return out;
  }

  private async environmentsOf(em: EntityManager, pluginId: number): Promise<number[]> {
    return (
      await em.getRepository(EnvironmentPluginEntity).find({ where: { pluginId }, order: { environmentId: 'ASC' } })
    ).map((l) => l.environmentId);
  }
}
