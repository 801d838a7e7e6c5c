import { GranuleError } from '@granule/core';

/** Stable codes of the plugin errors that are not diagnostics about a file. */
export type PluginErrorCode =
  | 'PLUGIN_PACKAGE_UNSAFE'
  | 'PLUGIN_PACKAGE_TOO_LARGE'
  | 'PLUGIN_PACKAGE_UNREADABLE'
  | 'PLUGIN_TARGET_EXISTS'
  | 'PLUGIN_BAD_NAME';

/** Raised for a package that cannot be built, read or extracted safely; the message says why. */
export class PluginError extends GranuleError<PluginErrorCode> {}
