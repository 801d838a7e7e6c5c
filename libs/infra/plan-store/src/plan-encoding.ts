import { createHash } from 'node:crypto';
import { createGunzip, gzipSync } from 'node:zlib';
import { writePlanJson } from '@granule/planner';
import type { Plan, PlanGroup, PlanInstance } from '@granule/planner';
import { PlanDocumentInvalidError, PlanRangeError } from './plan-store.errors';

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

/** What a plan holds beside its instances. */
export interface PlanTrailer {
  groups: PlanGroup[];
  concurrency: Record<string, number>;
}

export interface DecodePlanOptions {
  /** Compressed bytes handed to gunzip at a time; default 1 MiB (tests make it small). */
  chunkBytes?: number;
}

const HEAD = '{"instances":[';
const PARAMS = '"parameters":';
const SKIPPED = ',"skipped":';

/**
 * Reads what `encodePlan` wrote as a stream, calling `onInstance` for each instance in order and
 * returning the groups and concurrency. The JSON never becomes one string (V8 caps a string at
 * ~512 MiB; a 10,000 × 300 plan is ~730 MiB of JSON): `writePlanJson` puts one instance per line,
 * so the gunzipped text is cut at newlines and each line parsed alone.
 *
 * Repeated parts are shared, so memory per instance is small: every instance of a task carries
 * the same `parameters` text, parsed once into one object all of them hold (treat it as read-only);
 * task, node, type and stage names are one string each.
 */
export async function decodePlanStream(
  gzip: Buffer,
  onInstance: (instance: PlanInstance, index: number) => void,
  options: DecodePlanOptions = {},
): Promise<PlanTrailer> {
  const read = await scanPlan(gzip, 0, (inst, index) => (onInstance(inst, index), true), options);
  return read.trailer as PlanTrailer;
}

/** What `decodePlanRange` read: the instances, and whether the plan ends after them. */
export interface PlanRange {
  instances: PlanInstance[];
  /** Index of the first instance in `instances`. */
  from: number;
  /** True when the last instance of the plan is in `instances` (or the plan has none from `from`). */
  end: boolean;
  /** Instances in the whole plan: known when `end` is true. */
  total?: number;
}

/**
 * Instances `from`, `from + 1`, … of a stored plan while `take(instance, taken)` says to (it is
 * asked before each is kept; the first is always kept), without parsing the ones before `from`
 * (they are only counted) and without reading past the last one taken: a page of a plan of any
 * size. `from` past the end gives `PLAN_RANGE_INVALID`, naming how many instances the plan has.
 */
export async function decodePlanRange(
  gzip: Buffer,
  from: number,
  take: (instance: PlanInstance, taken: number) => boolean,
  options: DecodePlanOptions = {},
): Promise<PlanRange> {
  const instances: PlanInstance[] = [];
  let more = false;
  const read = await scanPlan(
    gzip,
    from,
    (inst) => {
      if (instances.length > 0 && !take(inst, instances.length)) {
        more = true;
        return false;
      }
      instances.push(inst);
      return true;
    },
    options,
  );
  if (!read.stopped && from > read.count) throw new PlanRangeError(from, read.count);
  return more ? { instances, from, end: false } : { instances, from, end: true, total: read.count };
}

/**
 * The line reader under `decodePlanStream` and `decodePlanRange`: instances before `from` are
 * counted, not parsed; `onInstance` returning false stops the read (no trailer then).
 */
async function scanPlan(
  gzip: Buffer,
  skip: number,
  onInstance: (instance: PlanInstance, index: number) => boolean,
  options: DecodePlanOptions,
): Promise<{ trailer?: PlanTrailer; count: number; stopped: boolean }> {
  const chunkBytes = options.chunkBytes ?? 1 << 20;
  const params = new Map<string, Record<string, unknown>>();
  const names = new Map<string, string>();
  const intern = (s: string): string => {
    const known = names.get(s);
    if (known !== undefined) return known;
    names.set(s, s);
    return s;
  };
  let state: 'head' | 'instances' | 'trailer' = 'head';
  let count = 0;
  let trailer = '';
  let lineNo = 0;
  let stopped = false;
  const fail = (why: string): never => {
    throw new PlanDocumentInvalidError(`stored plan is not what encodePlan writes: line ${lineNo} ${why}`);
  };
  const onLine = (raw: string): void => {
    lineNo++;
    if (state === 'head') {
      if (raw !== HEAD) fail(`expected '${HEAD}', found '${raw.slice(0, 40)}'`);
      state = 'instances';
      return;
    }
    if (state === 'trailer') {
      trailer += raw;
      return;
    }
    if (raw.startsWith(']')) {
      state = 'trailer';
      trailer = raw.slice(1);
      return;
    }
    if (count < skip) {
      count++;
      return;
    }
    const line = raw.endsWith(',') ? raw.slice(0, -1) : raw;
    // The parameters' text sits between the first `"parameters":` and the last `,"skipped":`
    // (every field before and after them is a JSON string, in which a quote is escaped).
    const from = line.indexOf(PARAMS);
    const to = line.lastIndexOf(SKIPPED);
    let inst: PlanInstance;
    try {
      if (from > 0 && to > from) {
        const text = line.slice(from + PARAMS.length, to);
        let shared = params.get(text);
        if (shared === undefined) {
          shared = JSON.parse(text) as Record<string, unknown>;
          params.set(text, shared);
        }
        inst = JSON.parse(line.slice(0, from + PARAMS.length) + '0' + line.slice(to)) as PlanInstance;
        inst.parameters = shared;
      } else {
        inst = JSON.parse(line) as PlanInstance;
      }
    } catch (err) {
      return fail(`is not a plan instance (${(err as Error).message})`);
    }
    inst.task = intern(inst.task);
    inst.node = intern(inst.node);
    inst.type = intern(inst.type) as PlanInstance['type'];
    inst.stage = intern(inst.stage) as PlanInstance['stage'];
    if (!onInstance(inst, count++)) stopped = true;
  };
  let rest = '';
  await new Promise<void>((resolve, reject) => {
    const gunzip = createGunzip();
    gunzip.setEncoding('utf8');
    gunzip.on('data', (text: string) => {
      try {
        let start = 0;
        let nl = text.indexOf('\n');
        if (nl < 0) {
          rest += text;
          return;
        }
        if (stopped) return;
        onLine(rest + text.slice(0, nl));
        rest = '';
        start = nl + 1;
        while (!stopped && (nl = text.indexOf('\n', start)) >= 0) {
          onLine(text.slice(start, nl));
          start = nl + 1;
        }
        rest = text.slice(start);
        if (stopped) {
          rest = '';
          gunzip.destroy();
          resolve();
        }
      } catch (err) {
        gunzip.destroy(err as Error);
      }
    });
    gunzip.on('error', reject);
    gunzip.on('end', resolve);
    const write = (offset: number): void => {
      while (offset < gzip.length && !gunzip.destroyed) {
        const next = Math.min(offset + chunkBytes, gzip.length);
        const more = gunzip.write(gzip.subarray(offset, next));
        offset = next;
        if (!more) {
          gunzip.once('drain', () => write(offset));
          return;
        }
      }
      if (!gunzip.destroyed) gunzip.end();
    };
    write(0);
  });
  if (stopped) return { count, stopped };
  if (rest) onLine(rest);
  if ((state as string) !== 'trailer') fail('ends before the instances list is closed');
  try {
    const parsed = JSON.parse(`{${trailer.replace(/^,/, '')}`) as PlanTrailer;
    return { trailer: { groups: parsed.groups, concurrency: parsed.concurrency }, count, stopped };
  } catch (err) {
    return fail(`has groups and concurrency that are not JSON (${(err as Error).message})`);
  }
}

/** Unpacks what `encodePlan` wrote into the whole document (by `decodePlanStream`: any size that fits in memory). */
export async function decodePlanDocument(gzip: Buffer, options: DecodePlanOptions = {}): Promise<PlanDocument> {
  const instances: PlanInstance[] = [];
  const trailer = await decodePlanStream(gzip, (inst) => instances.push(inst), options);
  return { instances, ...trailer };
}
