import { createHash } from 'node:crypto';
import { gunzip, gzipSync } from 'node:zlib';
import { promisify } from 'node:util';
import { writePlanJson } from '@granule/planner';
import type { Plan, PlanGroup, PlanInstance } from '@granule/planner';

/** A stored plan as `granule plan -o json` prints it. */
export interface PlanDocument {
  /** One entry per task per node, in execution order (by priority). */
  instances: PlanInstance[];
  groups: PlanGroup[];
  concurrency: Record<string, number>;
}

/** A plan serialised for storage. */
export interface EncodedPlan {
  /** gzip of the plan JSON (several gzip members, see `encodePlan`). */
  gzip: Buffer;
  /** sha256 (hex) of the uncompressed JSON. */
  hash: string;
  /** Size of the uncompressed JSON in bytes. */
  jsonBytes: number;
}

export interface EncodePlanOptions {
  /** zlib level 1-9; default 6. */
  level?: number;
  /** Uncompressed bytes per gzip member; default 1 MiB. */
  batchBytes?: number;
}

const gunzipAsync = promisify(gunzip);

/**
 * Writes the plan's JSON (exactly `writePlanJson`'s output) as gzip, hashing it on the way.
 * `writePlanJson` calls back synchronously, so an asynchronous zlib stream would queue the whole
 * JSON in memory before compressing any of it; instead each ~1 MiB batch is compressed at once
 * into its own gzip member. Concatenated members are a valid gzip file (RFC 1952 §2.2) that
 * `gunzip`, browsers and Node's zlib read as one stream. Memory stays at one batch plus the output.
 */
export function encodePlan(plan: Plan, options: EncodePlanOptions = {}): EncodedPlan {
  const level = options.level ?? 6;
  const batchBytes = options.batchBytes ?? 1 << 20;
  const hash = createHash('sha256');
  const members: Buffer[] = [];
  let pending: string[] = [];
  let pendingLength = 0;
  let jsonBytes = 0;
  const flush = (): void => {
    if (pending.length === 0) return;
    const bytes = Buffer.from(pending.join(''), 'utf8');
    pending = [];
    pendingLength = 0;
    jsonBytes += bytes.length;
    hash.update(bytes);
    members.push(gzipSync(bytes, { level }));
  };
  writePlanJson(plan, (chunk) => {
    pending.push(chunk);
    pendingLength += chunk.length;
    if (pendingLength >= batchBytes) flush();
  });
  flush();
  return { gzip: Buffer.concat(members), hash: hash.digest('hex'), jsonBytes };
}

/** Unpacks what `encodePlan` wrote. The whole JSON becomes one string: fine up to a few hundred MB. */
export async function decodePlanDocument(gzip: Buffer): Promise<PlanDocument> {
  const json = await gunzipAsync(gzip);
  return JSON.parse(json.toString('utf8')) as PlanDocument;
}
