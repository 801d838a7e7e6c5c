// Type-only: the request classes are class-validator DTOs, which this entry point must not load.
import type { CONFIG_STORE_REQUESTS } from '../dto/config-store.requests';
import type {
  EnvironmentView,
  InstallResult,
  NodeView,
  PingView,
  PluginView,
  ReleaseView,
  StrategyView,
  TasksView,
  AuditEntryView,
  RecordedCredentialView,
} from './config-store.views';

/** Queue group of config-store replicas: each request is answered by one of them. */
export const CONFIG_STORE_QUEUE = 'config-store';

/** An operation of the config-store API: a key of `CONFIG_STORE_REQUESTS` (`@granule/contracts/dto`). */
export type ConfigOperation = keyof typeof CONFIG_STORE_REQUESTS;

/** Reply type per operation. */
export interface ConfigStoreReplies {
  ping: PingView;
  'release.list': ReleaseView[];
  'release.get': ReleaseView;
  'release.install': InstallResult;
  'release.remove': ReleaseView;
  'plugin.list': PluginView[];
  'plugin.get': PluginView;
  'plugin.install': InstallResult;
  'plugin.remove': PluginView;
  'env.create': EnvironmentView;
  'env.list': EnvironmentView[];
  'env.get': EnvironmentView;
  'env.update': EnvironmentView;
  'env.plugin.enable': EnvironmentView;
  'env.plugin.disable': EnvironmentView;
  'node.add': NodeView;
  'node.list': NodeView[];
  'node.get': NodeView;
  'node.update': NodeView;
  'node.assign': NodeView;
  'node.remove': NodeView;
  'tasks.get': TasksView;
  'tasks.put': TasksView;
  'strategy.upload': StrategyView;
  'strategy.list': StrategyView[];
  'strategy.get': StrategyView;
  'strategy.remove': StrategyView;
  'audit.list': AuditEntryView[];
  'credential.record': RecordedCredentialView;
}

/** Request payload type per operation (the DTO class's shape). */
export type ConfigStoreRequest<Op extends ConfigOperation> = InstanceType<(typeof CONFIG_STORE_REQUESTS)[Op]>;

/**
 * Every operation name, for handler tables and docs, in the order of `CONFIG_STORE_REQUESTS`
 * (listed here so this entry point needs no DTO class; a unit test keeps the two equal).
 */
export const CONFIG_OPERATIONS: ConfigOperation[] = [
  'ping',
  'release.list',
  'release.get',
  'release.install',
  'release.remove',
  'plugin.list',
  'plugin.get',
  'plugin.install',
  'plugin.remove',
  'env.create',
  'env.list',
  'env.get',
  'env.update',
  'env.plugin.enable',
  'env.plugin.disable',
  'node.add',
  'node.list',
  'node.get',
  'node.update',
  'node.assign',
  'node.remove',
  'tasks.get',
  'tasks.put',
  'strategy.upload',
  'strategy.list',
  'strategy.get',
  'strategy.remove',
  'audit.list',
  'credential.record',
];

/** Whose deployment tasks: a release's, or an environment's (seed 002). */
export const TASK_SCOPES = ['release', 'environment'] as const;
export type TaskScope = (typeof TASK_SCOPES)[number];

/** `<prefix>.config.<operation>`. */
export function configSubject(prefix: string, operation: ConfigOperation): string {
  return `${prefix}.config.${operation}`;
}

/** The wildcard a config-store subscribes to. */
export function configSubjectWildcard(prefix: string): string {
  return `${prefix}.config.>`;
}
