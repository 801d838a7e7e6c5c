import { isPlainObject } from './data-file';
import { ParsedVersion, VersionConstraint, narrowness, parseConstraint, satisfies } from './version-compare';

/** The environment records are chosen for: the release's OS version and the Fuel version. */
export interface VariantEnvironment {
  /** The selected release's `version` (`liberty-8.0`); constraints on it hold when absent. */
  osVersion?: ParsedVersion;
  /** Constraints on it hold when absent. */
  fuelVersion?: ParsedVersion;
}

/** The keys of variant 1 (seed 001) that constrain a record. */
export const CONSTRAINT_KEYS = ['os-version', 'fuel-version'] as const;

/** Reports a bad constraint of `record` at `[key]`. */
export type ConstraintReporter = (record: Record<string, unknown>, key: string, message: string) => void;

interface Candidate {
  record: Record<string, unknown>;
  position: number;
  ok: boolean;
  items: number;
  narrow: number;
}

function evaluate(
  record: Record<string, unknown>,
  position: number,
  env: VariantEnvironment,
  report: ConstraintReporter,
): Candidate {
  let ok = true;
  let items = 0;
  let narrow = 0;
  for (const key of CONSTRAINT_KEYS) {
    if (record[key] === undefined || record[key] === null) continue;
    const parsed = parseConstraint(record[key]);
    if ('error' in parsed) {
      report(record, key, parsed.error);
      ok = false;
      continue;
    }
    const c: VersionConstraint = parsed;
    items += c.items.length;
    narrow += narrowness(c);
    const version = key === 'os-version' ? env.osVersion : env.fuelVersion;
    if (version !== undefined && !satisfies(version, c)) ok = false;
  }
  return { record, position, ok, items, narrow };
}

/** A copy of the record without the constraint keys. */
export function withoutConstraints(record: Record<string, unknown>): Record<string, unknown> {
  const out = { ...record };
  for (const key of CONSTRAINT_KEYS) delete out[key];
  return out;
}

/** Whether any record of the list carries a constraint key. */
export function hasConstraints(records: readonly unknown[]): boolean {
  return records.some((r) => isPlainObject(r) && CONSTRAINT_KEYS.some((k) => k in r));
}

/**
 * Variant 1 of seed 001. Records with the same key (`id`, or `name`) form a group; the group
 * becomes its best satisfied record: most constraint items, then the narrowest constraints
 * (exact `==` lists, then two-sided ranges, then one-sided), then file order. A group with no
 * satisfied record is dropped. Records without a key are kept when satisfied. The chosen record
 * takes the place of the group's first record; its constraint keys are removed. `copied` is
 * told about each copy so callers can keep track of where it came from.
 */
export function selectVariants(
  records: readonly unknown[],
  keyOf: (record: Record<string, unknown>) => string | undefined,
  env: VariantEnvironment,
  report: ConstraintReporter,
  copied: (from: Record<string, unknown>, to: Record<string, unknown>) => void = () => undefined,
): unknown[] {
  const groups = new Map<string, Candidate[]>();
  const slots: ({ key: string } | { keep: unknown })[] = [];
  records.forEach((record, position) => {
    if (!isPlainObject(record)) {
      slots.push({ keep: record });
      return;
    }
    const candidate = evaluate(record, position, env, report);
    const key = keyOf(record);
    if (key === undefined) {
      if (candidate.ok) slots.push({ keep: strip(record, copied) });
      return;
    }
    const group = groups.get(key);
    if (group) group.push(candidate);
    else {
      groups.set(key, [candidate]);
      slots.push({ key });
    }
  });
  const out: unknown[] = [];
  for (const slot of slots) {
    if ('keep' in slot) {
      out.push(slot.keep);
      continue;
    }
    const best = bestOf(groups.get(slot.key) ?? []);
    if (best) out.push(strip(best.record, copied));
  }
  return out;
}

function strip(
  record: Record<string, unknown>,
  copied: (from: Record<string, unknown>, to: Record<string, unknown>) => void,
): Record<string, unknown> {
  const out = withoutConstraints(record);
  copied(record, out);
  return out;
}

function bestOf(candidates: Candidate[]): Candidate | undefined {
  const ok = candidates.filter((c) => c.ok);
  ok.sort((a, b) => b.items - a.items || b.narrow - a.narrow || a.position - b.position);
  return ok[0];
}

/**
 * Node roles in variant form: a role whose value is a list of role records is a group of
 * variants (a YAML mapping cannot repeat a key). Other roles are kept when their own
 * constraints hold.
 */
export function selectRoleVariants(
  roles: Record<string, unknown>,
  env: VariantEnvironment,
  report: ConstraintReporter,
  copied?: (from: Record<string, unknown>, to: Record<string, unknown>) => void,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(roles)) {
    const variants = Array.isArray(value) ? value : [value];
    const [chosen] = selectVariants(variants, () => name, env, report, copied);
    if (chosen !== undefined) out[name] = chosen;
  }
  return out;
}
