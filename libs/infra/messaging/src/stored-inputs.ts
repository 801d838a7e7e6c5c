import { createHash } from 'node:crypto';
import { JetStreamApiError } from '@nats-io/jetstream';
import { Objm, StorageType, type ObjectStore } from '@nats-io/obj';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { GranuleError, formatBytes } from '@granule/core';
import { executionSubjects, type StoredInputsRef } from '@granule/contracts';
import { permissionViolationIn } from './nats-permission-errors';

const DAY_MS = 24 * 60 * 60 * 1000;

/** Settings of the inputs bucket (durations in milliseconds). */
export const INPUTS_BUCKET_SETTINGS = Object.freeze({
  /**
   * Inputs are read when a run (or a strategy run's phase) is planned: a week covers any
   * strategy run we expect, and the bucket does not grow without end.
   */
  maxAgeMs: 7 * DAY_MS,
});

export type StoredInputsCode = 'INPUTS_NOT_FOUND' | 'INPUTS_DAMAGED' | 'INPUTS_NOT_STORED';

/** Stored inputs that cannot be read (gone, or not what their name says), or could not be stored. */
export class StoredInputsError extends GranuleError<StoredInputsCode> {}

/** The SHA-256 (hex) of `bytes`: the name inputs are stored and checked by. */
export function inputsDigest(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * Opens object store `name` on first use and keeps it; a failed open is not kept, so the next
 * call tries again (the bucket may not exist yet, or NATS was away).
 */
export function objectStoreOpener(nc: NatsConnection, name: string): () => Promise<ObjectStore> {
  let bucket: Promise<ObjectStore> | undefined;
  return () => {
    bucket ??= new Objm(nc).open(name).catch((err: unknown) => {
      bucket = undefined;
      throw err;
    });
    return bucket;
  };
}

/** The bucket of `prefix`'s stored inputs: `<PREFIX>_INPUTS` (stream `OBJ_<PREFIX>_INPUTS`). */
export function inputsBucket(prefix: string): string {
  return executionSubjects(prefix).inputs.bucket;
}

/** Creates the inputs bucket when missing (the orchestrator does, with its streams). */
export async function ensureInputsBucket(nc: NatsConnection, prefix: string): Promise<void> {
  await new Objm(nc).create(inputsBucket(prefix), {
    description: 'Granule plan inputs too large for one message, by SHA-256 (ADR 0029)',
    storage: StorageType.File,
    ttl: nanos(INPUTS_BUCKET_SETTINGS.maxAgeMs),
  });
}

/**
 * Plan inputs too large for one NATS message, in a JetStream object store (chunked to the
 * server's max_payload by @nats-io/obj) under the SHA-256 of their JSON: the CLI stores them
 * and sends the reference in its command; graph-planner and the orchestrator read them back and
 * refuse bytes that do not match the name (ADR 0029).
 */
export class StoredInputs {
  private readonly open: () => Promise<ObjectStore>;

  constructor(
    nc: NatsConnection,
    private readonly prefix: string,
  ) {
    this.open = objectStoreOpener(nc, inputsBucket(prefix));
  }

  /** Stores `value` as JSON; the same inputs stored twice are one object. */
  async put(value: unknown): Promise<StoredInputsRef> {
    const bytes = new TextEncoder().encode(JSON.stringify(value));
    const ref = { name: inputsDigest(bytes), size: bytes.length };
    try {
      const bucket = await this.open();
      await bucket.putBlob({ name: ref.name }, bytes);
    } catch (err) {
      throw new StoredInputsError(
        'INPUTS_NOT_STORED',
        `the inputs (${formatBytes(bytes.length)}) could not be stored in object store ${inputsBucket(this.prefix)}: ${describe(err)}`,
        { cause: err },
      );
    }
    return ref;
  }

  /** The inputs `ref` names, checked against its digest and size. */
  async get(ref: StoredInputsRef): Promise<unknown> {
    const where = `inputs ${ref.name.slice(0, 12)}… in object store ${inputsBucket(this.prefix)}`;
    let bytes: Uint8Array | null;
    try {
      bytes = await (await this.open()).getBlob(ref.name);
    } catch (err) {
      const damaged = err instanceof Error && /digests do not match/.test(err.message);
      throw new StoredInputsError(
        damaged ? 'INPUTS_DAMAGED' : 'INPUTS_NOT_FOUND',
        `${where} could not be read: ${describe(err)}`,
        { cause: err },
      );
    }
    if (bytes === null)
      throw new StoredInputsError(
        'INPUTS_NOT_FOUND',
        `${where} are gone (inputs are kept ${INPUTS_BUCKET_SETTINGS.maxAgeMs / DAY_MS} days): start the deployment again`,
      );
    if (bytes.length !== ref.size || inputsDigest(bytes) !== ref.name)
      throw new StoredInputsError(
        'INPUTS_DAMAGED',
        `${where} are not what their name says (${formatBytes(bytes.length)}, SHA-256 ${inputsDigest(bytes).slice(0, 12)}…): start the deployment again`,
      );
    try {
      return JSON.parse(new TextDecoder().decode(bytes)) as unknown;
    } catch (err) {
      throw new StoredInputsError('INPUTS_DAMAGED', `${where} are not JSON: ${describe(err)}`, { cause: err });
    }
  }
}

function describe(err: unknown): string {
  const violation = permissionViolationIn(err);
  if (violation) return `NATS refused ${violation.operation} on ${violation.subject} for this identity`;
  if (err instanceof JetStreamApiError && /stream not found/i.test(err.message))
    return 'the bucket does not exist (the orchestrator creates it when it starts)';
  if (err instanceof Error && /object store not found/i.test(err.message))
    return 'the bucket does not exist (the orchestrator creates it when it starts)';
  return err instanceof Error ? err.message : String(err);
}
