import { GranuleError } from '@granule/core';

export type ArtifactErrorCode =
  /** No object of that digest in the artifacts bucket (or no bucket). */
  | 'ARTIFACT_NOT_FOUND'
  /** The bytes read are not what the digest says. */
  | 'ARTIFACT_DAMAGED'
  /** The bucket could not be read (permissions, connection). */
  | 'ARTIFACT_UNREADABLE'
  /** The artifact could not be stored. */
  | 'ARTIFACT_NOT_STORED'
  /** More bytes than declared, or than an artifact may hold (`MAX_ARTIFACT_BYTES`). */
  | 'ARTIFACT_TOO_LARGE'
  /** A run that is not over still needs it. */
  | 'ARTIFACT_IN_USE';

/** A package's deployment files could not be stored, found, read or trusted. */
export class ArtifactError extends GranuleError<ArtifactErrorCode> {}
