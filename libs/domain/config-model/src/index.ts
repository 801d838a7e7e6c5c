export { ConfigStoreError, NO_RELEASE_MESSAGE, noReleaseInstalled, notFound } from './config-store.errors';
export type { ConfigStoreErrorCode } from './config-store.errors';
export { ENVIRONMENT_STATUSES, NAME_HINT, NAME_RE, NODE_STATUSES, applySettingsPatch } from './config-model';
export type { EnvironmentStatus, GraphRecords, NodeStatus, TaskRecord } from './config-model';
export { parseTaskRecordList, toGraphRecords, toTaskRecord } from './task-record';
export { environmentGraph, roleNodes, selectTaskRange } from './task-subgraph';
export type { EnvironmentGraphInput, PluginGraphs, TaskRangeFilter } from './task-subgraph';
export { preparePlugin } from './plugin-install';
export type { PreparedPlugin, PreparedPluginRelease, PreparedRelease } from './plugin-install';
