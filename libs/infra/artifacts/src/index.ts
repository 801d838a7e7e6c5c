export { ARTIFACT_MTIME, digestFile, packDirectory } from './artifact-pack';
export type { PackedArtifact } from './artifact-pack';
export { ArtifactCache, CACHE_MARKER, DEFAULT_ARTIFACT_CACHE_BYTES } from './artifact-cache';
export type { ArtifactCacheEvents, ArtifactCacheOptions, ArtifactSource, HeldArtifact } from './artifact-cache';
export { ArtifactStore, MAX_ARTIFACT_BYTES, artifactsBucket, ensureArtifactsBucket } from './artifact-store';
export type { ArtifactInfo } from './artifact-store';
export { ArtifactError } from './artifact.errors';
export type { ArtifactErrorCode } from './artifact.errors';
export { storePluginArtifact } from './plugin-artifact';
