export { NodePluginFiles } from './node-plugin-files';
export {
  CHECKSUMS_FILE,
  DEFAULT_MAX_PACKAGE_BYTES,
  MANIFEST_FILE,
  PACKAGE_MTIME,
  buildPluginPackage,
  extractPluginPackage,
  readPackageEntries,
  readPluginPackage,
} from './plugin-package';
export type { BuiltPackage, PackageEntry, PackageReadOptions } from './plugin-package';
export { createPluginFromTemplate, isPackageFile, loadPluginForPlan, openPluginSource } from './plugin-source';
