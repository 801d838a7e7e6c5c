import {
  AddNodeRequest,
  AssignNodeRequest,
  CreateEnvironmentRequest,
  EmptyRequest,
  EnvironmentPluginRequest,
  GetTasksRequest,
  InstallPluginRequest,
  ListAuditRequest,
  ListNodesRequest,
  NodeRefRequest,
  PutTasksRequest,
  RefRequest,
  StrategyRefRequest,
  UpdateEnvironmentRequest,
  UpdateNodeRequest,
  UploadStrategyRequest,
} from './config-store.dto';

/**
 * The config-store's request/reply API: operation → request payload class (reply types are
 * `ConfigStoreReplies` in `@granule/contracts`). The NATS subject of an operation is
 * `<prefix>.config.<operation>`; `CONFIG_OPERATIONS` lists the same names in the same order.
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
  'audit.list': ListAuditRequest,
} as const;
