export * from './types';
export * from './nodes-file';
export { TASK_DIAGNOSTIC_CODES, TaskFieldError } from './task-diagnostics';
export type { TaskDiagnosticCode } from './task-diagnostics';
export { parseStageRef } from './stage-ref';
export {
  MASTER_NODE_UID,
  compileRoleSelector,
  matchesNode,
  matchesTaskName,
  parseRoleSelector,
  selectsMaster,
} from './role-selector';
export type { NodePredicate } from './role-selector';
export { resolveFaultTolerance } from './fault-tolerance';
export { createLocator, formatPath } from './yaml-source';
export type { LineLocator, PathSegment } from './yaml-source';
export {
  assertNoErrors,
  mergeParseResults,
  parseDeploymentTasks,
  parseLegacyTasks,
  parseNodeRoles,
  parseTaskData,
  parseTaskFile,
  parseTaskRecords,
} from './task-file-parser';
export type { ParseResult, TaskDataOptions, TaskFileFormat, TaskParseOptions } from './task-file-parser';
export { readYaml } from './yaml-limits';
export type { YamlBounds, YamlRead } from './yaml-limits';
export { countPlanInstances, planSizeProblems } from './plan-bounds';
export {
  MASK,
  UNSEALABLE_PARAMETERS,
  isClearSecret,
  isSealedValue,
  isSensitiveName,
  markedNames,
  maskAt,
  maskSealed,
  replaceAt,
  sealAt,
  sealedPaths,
  sensitiveDataPaths,
  sensitiveParameterPaths,
  sensitiveSettingPaths,
  textsAt,
  valueAt,
} from './sensitive-values';
export type { Seal, SealedValue, ValuePath } from './sensitive-values';
export {
  SECRETS_KEY_VARIABLE,
  SECRETS_PUBLIC_KEY_VARIABLE,
  clearSecretDiagnostics,
  maskSettings,
  maskTaskParameters,
  maskTaskRecord,
  sealData,
  sealSettings,
  sealSettingsPatch,
  sealTaskDefinitions,
  sealTaskRecords,
  taskRecordSecretPaths,
} from './secret-sealing';
export type { ClearSecret } from './secret-sealing';
export { sealDataFileText } from './secret-files';
