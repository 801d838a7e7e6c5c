import type { DataSource, EntityManager } from 'typeorm';
import { In } from 'typeorm';
import { INPUT_LIMITS, InvalidInputError, assertWithinLimit, jsonBytes } from '@granule/core';
import { ConfigStoreError, applySettingsPatch, noReleaseInstalled } from '@granule/config-model';
import type {
  CreateEnvironmentRequest,
  EnvironmentPluginRequest,
  EnvironmentView,
  UpdateEnvironmentRequest,
} from '@granule/contracts';
import {
  EnvironmentEntity,
  EnvironmentPluginEntity,
  NodeEntity,
  PluginEntity,
  ReleaseEntity,
} from '../persistence/config-store.entities';
import { enabledPlugins, findEnvironment, findPlugin, findRelease, mapDatabaseError } from './lookups';
import { SecretSealing } from './secret-sealing';
import { environmentView } from './views';

/** The plugin's release entry for an environment's release, or a refusal naming what it supports. */
export function pluginReleaseFor(plugin: PluginEntity, release: ReleaseEntity): PluginEntity['releases'][number] {
  const match = plugin.releases.find((r) => r.os === release.operatingSystem && r.version === release.version);
  if (match) return match;
  const supported = plugin.releases.map((r) => `${r.os} ${r.version}`).join(', ') || 'none';
  throw new ConfigStoreError(
    'CONFIG_INCOMPATIBLE',
    `plugin '${plugin.name}' does not support release '${release.name}' (${release.operatingSystem} ${release.version}); it supports: ${supported}`,
  );
}

/** Environments (clusters): create, list, show, change, enable and disable plugins. */
export class EnvironmentService {
  constructor(
    private readonly ds: DataSource,
    private readonly sealing = new SecretSealing(),
  ) {}

  async create(req: CreateEnvironmentRequest): Promise<EnvironmentView> {
    try {
      return await this.ds.transaction(async (em) => {
        const release = await this.pickRelease(em, req.release);
        if (await em.getRepository(EnvironmentEntity).findOneBy({ name: req.name })) {
          throw new ConfigStoreError('CONFIG_ALREADY_EXISTS', `environment '${req.name}' already exists`);
        }
        const repo = em.getRepository(EnvironmentEntity);
        const env = await repo.save(
          repo.create({
            name: req.name,
            releaseId: release.id,
            status: 'new',
            settings: this.sealing.settings(req.settings ?? {}, { prefix: ['settings'] }),
            taskOverrides: [],
          }),
        );
        for (const ref of req.plugins ?? []) await this.enable(em, env, release, ref);
        return this.view(em, env);
      });
    } catch (err) {
      throw mapDatabaseError(err, `environment '${req.name}'`);
    }
  }

  async list(): Promise<EnvironmentView[]> {
    const envs = await this.ds.getRepository(EnvironmentEntity).find({ order: { id: 'ASC' } });
    return Promise.all(envs.map((e) => this.view(this.ds.manager, e)));
  }

  async get(ref: string): Promise<EnvironmentView> {
    return this.view(this.ds.manager, await findEnvironment(this.ds.manager, ref));
  }

  async update(req: UpdateEnvironmentRequest): Promise<EnvironmentView> {
    try {
      return await this.ds.transaction(async (em) => {
        const env = await findEnvironment(em, req.id);
        if (req.name !== undefined && req.name !== env.name) {
          if (await em.getRepository(EnvironmentEntity).findOneBy({ name: req.name })) {
            throw new ConfigStoreError('CONFIG_ALREADY_EXISTS', `environment '${req.name}' already exists`);
          }
          env.name = req.name;
        }
        if (req.status !== undefined) env.status = req.status;
        if (req.settings !== undefined) env.settings = req.settings;
        if (req.settings_patch !== undefined) {
          env.settings = applySettingsPatch(env.settings, req.settings_patch);
        }
        if (req.settings !== undefined || req.settings_patch !== undefined)
          env.settings = this.sealing.settings(env.settings, { prefix: ['settings'] });
        assertWithinLimit('settings', jsonBytes(env.settings), INPUT_LIMITS.settingsJsonBytes, 'bytes', 'as JSON');
        await em.getRepository(EnvironmentEntity).save(env);
        return this.view(em, env);
      });
    } catch (err) {
      throw mapDatabaseError(err, `environment '${req.name ?? req.id}'`);
    }
  }

  async enablePlugin(req: EnvironmentPluginRequest): Promise<EnvironmentView> {
    return this.ds.transaction(async (em) => {
      const env = await findEnvironment(em, req.environment);
      const release = await findRelease(em, String(env.releaseId));
      await this.enable(em, env, release, req.plugin);
      return this.view(em, env);
    });
  }

  async disablePlugin(req: EnvironmentPluginRequest): Promise<EnvironmentView> {
    return this.ds.transaction(async (em) => {
      const env = await findEnvironment(em, req.environment);
      const plugin = await findPlugin(em, req.plugin);
      const result = await em
        .getRepository(EnvironmentPluginEntity)
        .delete({ environmentId: env.id, pluginId: plugin.id });
      if (!result.affected)
        throw new ConfigStoreError(
          'CONFIG_NOT_FOUND',
          `plugin '${plugin.name}' is not enabled in environment '${env.name}'`,
        );
      return this.view(em, env);
    });
  }

  private async pickRelease(em: EntityManager, ref: string | undefined): Promise<ReleaseEntity> {
    const releases = await em.getRepository(ReleaseEntity).find({ order: { id: 'ASC' } });
    if (releases.length === 0) throw noReleaseInstalled();
    if (ref !== undefined) return findRelease(em, ref);
    if (releases.length === 1) return releases[0];
    throw new InvalidInputError([
      {
        severity: 'error',
        code: 'CONFIG_MISSING_FIELD',
        path: 'release',
        message: `several releases are installed: name one (${releases.map((r) => `${r.id} ${r.name} ${r.version}`).join(', ')})`,
      },
    ]);
  }

  private async enable(em: EntityManager, env: EnvironmentEntity, release: ReleaseEntity, ref: string): Promise<void> {
    const plugin = await findPlugin(em, ref);
    pluginReleaseFor(plugin, release);
    const links = em.getRepository(EnvironmentPluginEntity);
    if (await links.findOneBy({ environmentId: env.id, pluginId: plugin.id })) {
      throw new ConfigStoreError(
        'CONFIG_ALREADY_EXISTS',
        `plugin '${plugin.name}' is already enabled in environment '${env.name}'`,
      );
    }
    const sameName = await em.getRepository(PluginEntity).find({ where: { name: plugin.name } });
    const other = await links.findOne({ where: { environmentId: env.id, pluginId: In(sameName.map((p) => p.id)) } });
    if (other)
      throw new ConfigStoreError(
        'CONFIG_ALREADY_EXISTS',
        `another version of plugin '${plugin.name}' is enabled in environment '${env.name}' (plugin id ${other.pluginId}); disable it first`,
      );
    await links.insert({ environmentId: env.id, pluginId: plugin.id });
  }

  private async view(em: EntityManager, env: EnvironmentEntity): Promise<EnvironmentView> {
    const release = await findRelease(em, String(env.releaseId));
    const ordered = await enabledPlugins(em, env);
    const nodes = await em
      .getRepository(NodeEntity)
      .find({ where: { environmentId: env.id }, order: { uid: 'ASC' }, select: { uid: true } });
    return environmentView(
      env,
      release,
      ordered,
      nodes.map((n) => n.uid),
    );
  }
}
