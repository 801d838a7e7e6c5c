export type { PluginEntryKind, PluginFiles } from './plugin-files.port';
export { isGlobPattern, normalizePluginPath } from './plugin-files.port';
export { MemoryPluginFiles } from './memory-plugin-files';
export { DATA_FILE_RE, parseDataFile, pluginStageHint } from './data-file';
export type { DataFile } from './data-file';
export { LoadContext, deepMerge, resolvePathKeys } from './path-loader';
export type { Origin } from './path-loader';
export {
  OPENSTACK_SERIES,
  compareNumbers,
  compareVersions,
  narrowness,
  parseConstraint,
  parseVersion,
  satisfies,
} from './version-compare';
export type { ConstraintItem, ConstraintOperator, ParsedVersion, VersionConstraint } from './version-compare';
export { CONSTRAINT_KEYS, selectRoleVariants, selectVariants, withoutConstraints } from './variant-selection';
export type { VariantEnvironment } from './variant-selection';
export {
  CONF_KEYS,
  SUPPORTED_PACKAGE_VERSIONS,
  UNSUPPORTED_PACKAGE_VERSIONS,
  loadPlugin,
  releaseGraphs,
  releaseOs,
  selectConfVariants,
  selectRelease,
} from './plugin-loader';
export type { ConfData, ConfKey, LoadedPlugin, LoadedRelease, ReleaseQuery, SelectedRelease } from './plugin-loader';
export {
  STANDARD_GRAPH_TYPES,
  buildPluginGraphs,
  checkPluginStages,
  effectiveConf,
  effectiveTree,
  loadPluginTasks,
} from './plugin-tasks';
export type { EffectiveConf, PluginTaskOptions, PluginTaskSet } from './plugin-tasks';
export { assertValidPlugin, validatePlugin } from './plugin-validator';
export type { PluginValidation } from './plugin-validator';
export { TEMPLATE_NAME_RE, TEMPLATE_PACKAGE_VERSIONS, pluginTemplate } from './plugin-template';
export type { TemplatePackageVersion } from './plugin-template';
export { PluginError } from './plugin.errors';
export type { PluginErrorCode } from './plugin.errors';
export {
  PACKAGE_DIGEST_RE,
  PACKAGE_PARAMETER,
  anchorParameters,
  anchorScriptPaths,
  markPackageTasks,
  needsPackage,
  packageOf,
} from './script-paths';
export type { PackageRef } from './script-paths';
