/** Granule's version: the repository's package version (a unit test keeps them equal). */
export const GRANULE_VERSION = '0.1.0';
