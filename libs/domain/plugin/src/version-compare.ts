import semver from 'semver';

/**
 * OpenStack series in release order. Up to `zed` the names are alphabetical; after it the
 * alphabet starts again (2023.1 antelope), so the list, not the alphabet, decides.
 */
export const OPENSTACK_SERIES = [
  'austin',
  'bexar',
  'cactus',
  'diablo',
  'essex',
  'folsom',
  'grizzly',
  'havana',
  'icehouse',
  'juno',
  'kilo',
  'liberty',
  'mitaka',
  'newton',
  'ocata',
  'pike',
  'queens',
  'rocky',
  'stein',
  'train',
  'ussuri',
  'victoria',
  'wallaby',
  'xena',
  'yoga',
  'zed',
  'antelope',
  'bobcat',
  'caracal',
  'dalmatian',
  'epoxy',
  'flamingo',
] as const;

/** A version as written in a release or a constraint, split into the parts the rule compares. */
export interface ParsedVersion {
  raw: string;
  /** OpenStack series name: `liberty` in `liberty-8.0`. */
  series?: string;
  /** Dated OpenStack version: `[2015, 1]` in `2015.1` or `2015.1-8.0`. */
  dated?: number[];
  /** The numbers after the last `-` (`[8, 0]` in `liberty-8.0`), or the whole version when it has no `-`. */
  tail: number[];
}

const NUMBERS = /^\d+(\.\d+)*$/;

/** Parses `liberty-8.0`, `mitaka-10.0`, `2015.1-8.0`, `2015.1`, `8.0`, `9`; `undefined` when it is none of them. */
export function parseVersion(raw: string): ParsedVersion | undefined {
  const text = raw.trim().toLowerCase();
  const dash = text.lastIndexOf('-');
  const head = dash < 0 ? undefined : text.slice(0, dash);
  const tailText = dash < 0 ? text : text.slice(dash + 1);
  if (!NUMBERS.test(tailText)) return undefined;
  const tail = tailText.split('.').map(Number);
  if (head === undefined) return tail[0] >= 2000 && tail.length >= 2 ? { raw, dated: tail, tail } : { raw, tail };
  if (/^[a-z][a-z0-9_]*$/.test(head)) return { raw, series: head, tail };
  if (NUMBERS.test(head)) return { raw, dated: head.split('.').map(Number), tail };
  return undefined;
}

/** Numeric dotted compare (`8` = `8.0` = `8.0.0`); semver when both fit in three parts. */
export function compareNumbers(a: number[], b: number[]): number {
  if (a.length <= 3 && b.length <= 3) {
    const sv = (n: number[]): string => [...n, 0, 0, 0].slice(0, 3).join('.');
    return semver.compare(sv(a), sv(b));
  }
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

function seriesRank(name: string): number {
  const i = (OPENSTACK_SERIES as readonly string[]).indexOf(name);
  return i;
}

function compareSeries(a: string, b: string): number {
  const ra = seriesRank(a);
  const rb = seriesRank(b);
  if (ra >= 0 && rb >= 0) return Math.sign(ra - rb);
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Compares two versions (the rule is in the README):
 * 1. both have a series name (`liberty-8.0`, `mitaka-10.0`): by series order, then by the
 *    numbers after the `-`;
 * 2. both have a dated part (`2015.1`, `2015.1-8.0`): by the dated part, then by the numbers
 *    after the `-` when both have them;
 * 3. otherwise by the numbers after the last `-` (`liberty-8.0` compares as `8.0`), or the
 *    whole number when there is no `-` (`2015.1`, `9`).
 */
export function compareVersions(a: ParsedVersion, b: ParsedVersion): number {
  if (a.series !== undefined && b.series !== undefined) {
    return compareSeries(a.series, b.series) || compareNumbers(a.tail, b.tail);
  }
  if (a.dated !== undefined && b.dated !== undefined) {
    const d = compareNumbers(a.dated, b.dated);
    if (d !== 0) return d;
    const aHasTail = a.tail !== a.dated;
    const bHasTail = b.tail !== b.dated;
    return aHasTail && bHasTail ? compareNumbers(a.tail, b.tail) : 0;
  }
  return compareNumbers(a.tail, b.tail);
}

export type ConstraintOperator = '==' | '!=' | '>=' | '<=' | '>' | '<';

export interface ConstraintItem {
  op: ConstraintOperator;
  version: ParsedVersion;
}

/**
 * A parsed `os-version` / `fuel-version` value. `mode` is `any` when every item is `==`
 * (`"==2014.2,==2015.1"`: one of them), else `all` (`">=7,<=8"`: every item).
 */
export interface VersionConstraint {
  raw: string;
  items: ConstraintItem[];
  mode: 'any' | 'all';
}

/**
 * Parses a comparison list: items separated by commas, each an operator (`==`, `!=`, `>=`,
 * `<=`, `>`, `<`; none means `==`) and a version. A YAML list of such strings is accepted too.
 * Returns an error message for bad input.
 */
export function parseConstraint(value: unknown): VersionConstraint | { error: string } {
  const parts =
    typeof value === 'string'
      ? value.split(',')
      : Array.isArray(value) && value.every((v) => typeof v === 'string' || typeof v === 'number')
        ? value.map(String)
        : undefined;
  if (parts === undefined)
    return {
      error: `expected a comparison list like ">=7,<=8", got ${Array.isArray(value) ? 'a list' : typeof value === 'object' && value !== null ? 'a mapping' : JSON.stringify(value)}`,
    };
  const raw = Array.isArray(value) ? value.join(',') : String(value);
  const items: ConstraintItem[] = [];
  for (const part of parts.map((p) => p.trim())) {
    if (part === '') return { error: `"${raw}" has an empty item; write items like ">=7,<=8"` };
    const m = /^(==|!=|>=|<=|>|<|=)?\s*(.+)$/.exec(part);
    const version = m ? parseVersion(m[2]) : undefined;
    if (!m || !version)
      return {
        error: `"${part}" in "${raw}" is not a comparison: expected an operator (==, !=, >=, <=, >, <) and a version like 8.0, 2015.1 or liberty-8.0`,
      };
    items.push({ op: m[1] === undefined || m[1] === '=' ? '==' : (m[1] as ConstraintOperator), version });
  }
  return { raw, items, mode: items.every((i) => i.op === '==') ? 'any' : 'all' };
}

function itemHolds(version: ParsedVersion, item: ConstraintItem): boolean {
  const c = compareVersions(version, item.version);
  switch (item.op) {
    case '==':
      return c === 0;
    case '!=':
      return c !== 0;
    case '>=':
      return c >= 0;
    case '<=':
      return c <= 0;
    case '>':
      return c > 0;
    case '<':
      return c < 0;
  }
}

/** Whether `version` satisfies the constraint (any item for an all-`==` list, every item otherwise). */
export function satisfies(version: ParsedVersion, constraint: VersionConstraint): boolean {
  return constraint.mode === 'any'
    ? constraint.items.some((i) => itemHolds(version, i))
    : constraint.items.every((i) => itemHolds(version, i));
}

/**
 * How narrow a constraint is, for the best-fit choice: an exact list (`==`) 3, a range bounded
 * on both sides 2, a one-sided range 1, only `!=` 0.
 */
export function narrowness(constraint: VersionConstraint): number {
  if (constraint.mode === 'any') return 3;
  const lower = constraint.items.some((i) => i.op === '>=' || i.op === '>' || i.op === '==');
  const upper = constraint.items.some((i) => i.op === '<=' || i.op === '<' || i.op === '==');
  return lower && upper ? 2 : lower || upper ? 1 : 0;
}
