import type { EntityManager } from 'typeorm';
import { In } from 'typeorm';
import { ConfigStoreError, notFound } from '@granule/config-model';
import {
  EnvironmentEntity,
  EnvironmentPluginEntity,
  NodeEntity,
  PluginEntity,
  ReleaseEntity,
} from '../persistence/config-store.entities';

/** PostgreSQL's largest `integer`: the ids' column type. A larger number names no row by id. */
const MAX_ID = 2_147_483_647;

/** An id: digits within the ids' column (a longer number is looked for as a name, and not found). */
const isId = (ref: string): boolean => /^\d{1,10}$/.test(ref) && Number(ref) <= MAX_ID;

async function byRef<T extends { id: number; name: string }>(
  em: EntityManager,
  entity: new () => T,
  what: string,
  ref: string,
  label: (e: T) => string,
): Promise<T> {
  const repo = em.getRepository(entity);
  const found = isId(ref) ? await repo.findBy({ id: Number(ref) } as never) : await repo.findBy({ name: ref } as never);
  if (found.length === 1) return found[0];
  if (found.length > 1) {
    throw new ConfigStoreError(
      'CONFIG_AMBIGUOUS',
      `${what} '${ref}' is ambiguous: ${found.map((e) => `${label(e)} (id ${e.id})`).join(', ')}; use the id`,
    );
  }
  const all = await repo.find({ order: { id: 'ASC' } as never });
  throw notFound(
    what,
    ref,
    all.map((e) => `${e.id} ${label(e)}`),
  );
}

/** A release by id or name. */
export function findRelease(em: EntityManager, ref: string): Promise<ReleaseEntity> {
  return byRef(em, ReleaseEntity, 'release', ref, (r) => `${r.name} ${r.version}`);
}

/** A plugin by id or name. */
export function findPlugin(em: EntityManager, ref: string): Promise<PluginEntity> {
  return byRef(em, PluginEntity, 'plugin', ref, (p) => `${p.name} ${p.version}`);
}

/** An environment by id or name. */
export function findEnvironment(em: EntityManager, ref: string): Promise<EnvironmentEntity> {
  return byRef(em, EnvironmentEntity, 'environment', ref, (e) => e.name);
}

/** A node by uid. */
export async function findNode(em: EntityManager, uid: string): Promise<NodeEntity> {
  const node = await em.getRepository(NodeEntity).findOneBy({ uid });
  if (!node) throw notFound('node', uid);
  return node;
}

/** Maps a PostgreSQL constraint violation that a check before it could not rule out (a race) to a refusal. */
export function mapDatabaseError(err: unknown, what: string): unknown {
  const code =
    (err as { code?: string; driverError?: { code?: string } }).driverError?.code ?? (err as { code?: string }).code;
  if (code === '23505') return new ConfigStoreError('CONFIG_ALREADY_EXISTS', `${what} already exists`, { cause: err });
  if (code === '23503') return new ConfigStoreError('CONFIG_IN_USE', `${what} is still referenced`, { cause: err });
  return err;
}

/** The plugins enabled in an environment, in the order they were enabled. */
export async function enabledPlugins(em: EntityManager, env: EnvironmentEntity): Promise<PluginEntity[]> {
  const links = await em
    .getRepository(EnvironmentPluginEntity)
    .find({ where: { environmentId: env.id }, order: { enabledAt: 'ASC', pluginId: 'ASC' } });
  const plugins =
    links.length === 0
      ? []
      : await em.getRepository(PluginEntity).find({ where: { id: In(links.map((l) => l.pluginId)) } });
  return links.map((l) => plugins.find((p) => p.id === l.pluginId)).filter((p): p is PluginEntity => p !== undefined);
}
