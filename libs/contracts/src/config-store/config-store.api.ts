import {
  AddNodeRequest,
  AssignNodeRequest,
  CreateEnvironmentRequest,
  EmptyRequest,
  EnvironmentPluginRequest,
  GetTasksRequest,
  InstallPluginRequest,
  ListNodesRequest,
  NodeRefRequest,
  PutTasksRequest,
  RefRequest,
  StrategyRefRequest,
  UpdateEnvironmentRequest,
  UpdateNodeRequest,
  UploadStrategyRequest,
} from './config-store.dto';
import type { EnvironmentView, InstallResult, NodeView, PingView, PluginView, ReleaseView, StrategyView, TasksView } from './config-store.views';

/** Queue group of config-store replicas: each request is answered by one of them. */
export const CONFIG_STORE_QUEUE = 'config-store';

/**
 * The config-store's request/reply API: operation → request payload class and reply type.
 * The NATS subject of an operation is `<prefix>.config.<operation>`.
 */
export const CONFIG_STORE_REQUESTS = {
  ping: EmptyRequest,
  'release.list': EmptyRequest,
  'release.get': RefRequest,
  'release.install': InstallPluginRequest,
  'release.remove': RefRequest,
  'plugin.list': EmptyRequest,
  'plugin.get': RefRequest,
  'plugin.install': InstallPluginRequest,
  'plugin.remove': RefRequest,
  'env.create': CreateEnvironmentRequest,
  'env.list': EmptyRequest,
  'env.get': RefRequest,
  'env.update': UpdateEnvironmentRequest,
  'env.plugin.enable': EnvironmentPluginRequest,
  'env.plugin.disable': EnvironmentPluginRequest,
  'node.add': AddNodeRequest,
  'node.list': ListNodesRequest,
  'node.get': NodeRefRequest,
  'node.update': UpdateNodeRequest,
  'node.assign': AssignNodeRequest,
  'node.remove': NodeRefRequest,
  'tasks.get': GetTasksRequest,
  'tasks.put': PutTasksRequest,
  'strategy.upload': UploadStrategyRequest,
  'strategy.list': EmptyRequest,
  'strategy.get': StrategyRefRequest,
  'strategy.remove': StrategyRefRequest,
} as const;

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
}

/** Request payload type per operation (the DTO class's shape). */
export type ConfigStoreRequest<Op extends ConfigOperation> = InstanceType<(typeof CONFIG_STORE_REQUESTS)[Op]>;

/** Every operation name, for handler tables and docs. */
export const CONFIG_OPERATIONS = Object.keys(CONFIG_STORE_REQUESTS) as ConfigOperation[];

/** `<prefix>.config.<operation>`. */
export function configSubject(prefix: string, operation: ConfigOperation): string {
  return `${prefix}.config.${operation}`;
}

/** The wildcard a config-store subscribes to. */
export function configSubjectWildcard(prefix: string): string {
  return `${prefix}.config.>`;
}

/** The error part of a failed reply: a stable code, the operator's message, and every input problem. */
export interface ReplyError {
  code: string;
  message: string;
  diagnostics?: import('@granule/core').Diagnostic[];
}

/** Every reply is one of these (JSON). */
export type ConfigReply<T> = { ok: true; data: T } | { ok: false; error: ReplyError };
