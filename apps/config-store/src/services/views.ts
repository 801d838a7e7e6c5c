import type {
  EnvironmentView,
  NodeCredentialView,
  NodeView,
  PluginView,
  ReleaseView,
  StrategyView,
} from '@granule/contracts';
import type { GraphRecords } from '@granule/config-model';
import type {
  EnvironmentEntity,
  NodeEntity,
  PluginEntity,
  ReleaseEntity,
  StrategyEntity,
} from '../persistence/config-store.entities';

const counts = (graphs: GraphRecords): Record<string, number> =>
  Object.fromEntries(Object.entries(graphs).map(([type, tasks]) => [type, tasks.length]));

export function releaseView(r: ReleaseEntity): ReleaseView {
  return {
    id: r.id,
    name: r.name,
    version: r.version,
    operating_system: r.operatingSystem,
    description: r.description,
    plugin: { name: r.pluginName, version: r.pluginVersion },
    graphs: counts(r.graphs),
    attributes: r.attributes,
    installed_at: r.installedAt.toISOString(),
  };
}

export function pluginView(p: PluginEntity, environments: number[]): PluginView {
  return {
    id: p.id,
    name: p.name,
    version: p.version,
    package_version: p.packageVersion,
    title: p.title,
    description: p.description,
    is_hotpluggable: p.isHotpluggable,
    releases: p.releases.map((r) => ({ os: r.os, version: r.version, graphs: counts(r.graphs) })),
    environments,
    source: p.source,
    installed_at: p.installedAt.toISOString(),
  };
}

export function environmentView(
  e: EnvironmentEntity,
  release: ReleaseEntity,
  plugins: PluginEntity[],
  nodes: string[],
): EnvironmentView {
  return {
    id: e.id,
    name: e.name,
    status: e.status,
    release: { id: release.id, name: release.name, version: release.version },
    settings: e.settings,
    plugins: plugins.map((p) => ({ id: p.id, name: p.name, version: p.version })),
    nodes,
    task_overrides: e.taskOverrides.length,
    created_at: e.createdAt.toISOString(),
    updated_at: e.updatedAt.toISOString(),
  };
}

/** A node with its agent credential's state (`CredentialService.ofNodes`). */
export function nodeView(n: NodeEntity, credential: NodeCredentialView | null): NodeView {
  return {
    uid: n.uid,
    hostname: n.hostname,
    address: n.address,
    environment: n.environmentId,
    roles: n.roles,
    pending_roles: n.pendingRoles,
    tags: n.tags,
    labels: n.labels,
    rack: n.rack,
    status: n.status,
    credential,
    created_at: n.createdAt.toISOString(),
    updated_at: n.updatedAt.toISOString(),
  };
}

export function strategyView(s: StrategyEntity): StrategyView {
  return { name: s.name, groups: s.groups, document: s.document, uploaded_at: s.uploadedAt.toISOString() };
}
