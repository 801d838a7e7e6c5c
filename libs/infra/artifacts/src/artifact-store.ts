import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { jetstream, JetStreamApiError } from '@nats-io/jetstream';
import { Objm, StorageType, type ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { formatBytes } from '@granule/core';
import { executionSubjects } from '@granule/contracts';
import { objectStoreOpener, permissionViolationIn } from '@granule/messaging';
import { DEFAULT_MAX_PACKAGE_BYTES } from '@granule/plugin-files';
import { ArtifactError } from './artifact.errors';

/**
 * Largest artifact config-store accepts over HTTP: the limit on a package's unpacked size
 * (`DEFAULT_MAX_PACKAGE_BYTES`, 512 MiB), which its deployment files' tar stays within.
 */
export const MAX_ARTIFACT_BYTES = DEFAULT_MAX_PACKAGE_BYTES;

/** The bucket of `prefix`'s artifacts: `<PREFIX>_ARTIFACTS` (stream `OBJ_<PREFIX>_ARTIFACTS`). */
export function artifactsBucket(prefix: string): string {
  return executionSubjects(prefix).artifacts.bucket;
}

/** Creates the artifacts bucket when missing (config-store does when it starts). No max age: removal is explicit. */
export async function ensureArtifactsBucket(nc: NatsConnection, prefix: string): Promise<void> {
  await new Objm(nc).create(artifactsBucket(prefix), {
    description: 'Granule plugin and release deployment files, one tar per SHA-256 (ADR 0026)',
    storage: StorageType.File,
  });
}

/** What the bucket knows of an artifact. */
export interface ArtifactInfo {
  digest: string;
  size: number;
}

/** How many chunks a reader lets NATS deliver ahead of the disk (each at most max_payload). */
const READ_AHEAD_CHUNKS = 8;

/**
 * The artifacts bucket (a JetStream object store): deterministic tars of deployment files
 * named by their SHA-256 (hex). Bytes go in and out as streams of chunks (@nats-io/obj splits
 * an object into chunks no larger than the server's max_payload); a reader pulls a few chunks
 * at a time, so neither side ever holds a whole package. Every read is checked against the
 * name: a reader never trusts bytes whose SHA-256 or size differ.
 */
export class ArtifactStore {
  private readonly open: () => Promise<ObjectStore>;

  constructor(
    private readonly nc: NatsConnection,
    private readonly prefix: string,
  ) {
    this.open = objectStoreOpener(nc, artifactsBucket(prefix));
  }

  get bucketName(): string {
    return artifactsBucket(this.prefix);
  }

  private where(digest: string): string {
    return `artifact ${digest.slice(0, 12)}… in object store ${this.bucketName}`;
  }

  /** The artifact's size, or undefined when the bucket has no such object. */
  async info(digest: string): Promise<ArtifactInfo | undefined> {
    try {
      const info = await (await this.open()).info(digest);
      return info && !info.deleted ? { digest, size: info.size } : undefined;
    } catch (err) {
      throw this.readError(digest, err);
    }
  }

  /**
   * Stores the tar at `file` under `digest` (its SHA-256, computed by the caller as it packed
   * it), streaming it from disk. An artifact already stored with that digest and size is kept
   * as it is: the same files installed twice are stored once.
   */
  async putFile(file: string, expected: ArtifactInfo): Promise<{ stored: boolean }> {
    const present = await this.info(expected.digest).catch(() => undefined);
    if (present?.size === expected.size) return { stored: false };
    const hash = createHash('sha256');
    let size = 0;
    const source = createReadStream(file);
    source.on('data', (c) => {
      hash.update(c as Buffer);
      size += (c as Buffer).length;
    });
    await this.put(expected, Readable.toWeb(source) as ReadableStream<Uint8Array>);
    if (hash.digest('hex') !== expected.digest || size !== expected.size) {
      await this.delete(expected.digest).catch(() => undefined);
      throw new ArtifactError(
        'ARTIFACT_NOT_STORED',
        `${file} changed while it was stored (${formatBytes(size)}, not ${formatBytes(expected.size)} with the digest it was packed with): install again`,
      );
    }
    return { stored: true };
  }

  /**
   * Stores a stream under `digest` and checks it as it passes: bytes whose SHA-256 or size is
   * not what the caller said are deleted again and refused (`ARTIFACT_DAMAGED`). A stream that
   * goes on past the size the caller said is stopped there and refused (`ARTIFACT_TOO_LARGE`)
   * without reading further, and nothing of it is kept.
   */
  async putStream(expected: ArtifactInfo, source: AsyncIterable<Uint8Array>): Promise<void> {
    const hash = createHash('sha256');
    let size = 0;
    let refusal: ArtifactError | undefined;
    const where = this.where(expected.digest);
    const checked = (async function* () {
      for await (const chunk of source) {
        size += chunk.length;
        if (size > expected.size) {
          refusal = new ArtifactError(
            'ARTIFACT_TOO_LARGE',
            `the upload of ${where} goes on past the ${formatBytes(expected.size)} it declared; it was stopped and nothing was kept`,
          );
          throw refusal;
        }
        hash.update(chunk);
        yield chunk;
      }
    })();
    try {
      await this.put(expected, Readable.toWeb(Readable.from(checked)) as ReadableStream<Uint8Array>);
    } catch (err) {
      if (!refusal) throw err;
      await this.delete(expected.digest).catch(() => undefined);
      throw refusal;
    }
    const digest = hash.digest('hex');
    if (digest !== expected.digest || size !== expected.size) {
      await this.delete(expected.digest).catch(() => undefined);
      throw new ArtifactError(
        'ARTIFACT_DAMAGED',
        `the uploaded bytes (${formatBytes(size)}, SHA-256 ${digest.slice(0, 12)}…) are not the artifact named ${expected.digest.slice(0, 12)}… of ${formatBytes(expected.size)}`,
      );
    }
  }

  private async put(expected: ArtifactInfo, rs: ReadableStream<Uint8Array>): Promise<void> {
    try {
      await (await this.open()).put({ name: expected.digest, description: `sha256:${expected.digest}` }, rs);
    } catch (err) {
      throw new ArtifactError(
        'ARTIFACT_NOT_STORED',
        `the deployment files (${formatBytes(expected.size)}) could not be stored in object store ${this.bucketName}: ${describe(err)}`,
        { cause: err },
      );
    }
  }

  /**
   * Streams the artifact into `sink` (chunk by chunk, waiting for the sink before asking NATS
   * for more) and checks its SHA-256 and size against its name. Throws `ARTIFACT_NOT_FOUND`,
   * `ARTIFACT_DAMAGED` or `ARTIFACT_UNREADABLE`; the sink then holds something to throw away.
   */
  async read(digest: string, sink: (chunk: Uint8Array) => Promise<void>): Promise<ArtifactInfo> {
    let info;
    try {
      info = await (await this.open()).info(digest);
    } catch (err) {
      throw this.readError(digest, err);
    }
    if (!info || info.deleted)
      throw new ArtifactError('ARTIFACT_NOT_FOUND', `${this.where(digest)} does not exist: install the plugin again`);
    const hash = createHash('sha256');
    let size = 0;
    if (info.size > 0) {
      try {
        const js = jetstream(this.nc);
        const consumer = await js.consumers.get(`OBJ_${this.bucketName}`, {
          filter_subjects: `$O.${this.bucketName}.C.${info.nuid}`,
        });
        let chunks = 0;
        while (chunks < info.chunks) {
          const batch = await consumer.fetch({ max_messages: READ_AHEAD_CHUNKS, expires: 10_000 });
          let got = 0;
          for await (const m of batch) {
            got++;
            chunks++;
            hash.update(m.data);
            size += m.data.length;
            await sink(m.data);
            if (chunks === info.chunks) break;
          }
          if (got === 0) throw new Error(`no chunk arrived after ${chunks} of ${info.chunks}`);
        }
        await consumer.delete().catch(() => undefined);
      } catch (err) {
        throw this.readError(digest, err);
      }
    }
    const actual = hash.digest('hex');
    if (actual !== digest || size !== info.size)
      throw new ArtifactError(
        'ARTIFACT_DAMAGED',
        `${this.where(digest)} is not what its name says (${formatBytes(size)}, SHA-256 ${actual.slice(0, 12)}…): install the plugin again`,
      );
    return { digest, size };
  }

  /** {@link read} into a new file at `file` (mode 0600). */
  async fetchTo(digest: string, file: string): Promise<ArtifactInfo> {
    const out = createWriteStream(file, { mode: 0o600, flags: 'wx' });
    const opened = new Promise<void>((resolve, reject) => {
      out.once('open', () => resolve());
      out.once('error', reject);
    });
    await opened;
    try {
      const info = await this.read(digest, (chunk) => write(out, chunk));
      await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
      return info;
    } catch (err) {
      out.destroy();
      throw err;
    }
  }

  /** Deletes the artifact (its chunks are purged); nothing when it is not there. */
  async delete(digest: string): Promise<void> {
    const bucket = await this.open();
    if (await bucket.info(digest)) await bucket.delete(digest);
  }

  private readError(digest: string, err: unknown): ArtifactError {
    if (err instanceof ArtifactError) return err;
    const missing =
      (err instanceof JetStreamApiError && /stream not found/i.test(err.message)) ||
      (err instanceof Error && /object store not found|stream not found/i.test(err.message));
    return new ArtifactError(
      missing ? 'ARTIFACT_NOT_FOUND' : 'ARTIFACT_UNREADABLE',
      `${this.where(digest)} could not be read: ${missing ? 'the bucket does not exist (config-store creates it when it starts)' : describe(err)}`,
      { cause: err },
    );
  }
}

function write(out: WriteStream, chunk: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => out.write(chunk, (err) => (err ? reject(err) : resolve())));
}

function describe(err: unknown): string {
  const violation = permissionViolationIn(err);
  if (violation) return `NATS refused ${violation.operation} on ${violation.subject} for this identity`;
  return err instanceof Error ? err.message : String(err);
}
