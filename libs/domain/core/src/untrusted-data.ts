import type { Diagnostic } from './errors';
import { INPUT_LIMITS } from './input-limits';

/**
 * Keys that reach `Object.prototype` (or a class) when a user's object is merged or a dotted
 * path is followed with plain property access. Refused in every object a user sends.
 */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

export const FORBIDDEN_KEY_MESSAGE = "the keys '__proto__', 'constructor' and 'prototype' are not allowed";

/** True for a key that must never be set on an object built from user data. */
export function isForbiddenKey(key: string): boolean {
  return FORBIDDEN_KEYS.has(key);
}

/** What a walk of untrusted data found: its deepest nesting and the first forbidden key. */
export interface DataShape {
  /** Deepest nesting: 0 for a scalar, 1 for `{}` or `[]`, 2 for `{a: {}}`. */
  depth: number;
  /** Path of the first place deeper than `maxDepth` (when the walk stopped there). */
  tooDeepAt?: string;
  /** Path of the first forbidden key. */
  forbiddenKeyAt?: string;
}

const step = (path: string, key: string | number): string =>
  typeof key === 'number' ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`;

/**
 * Walks parsed JSON/YAML data without recursion (a 50,000-deep document must not overflow the
 * stack here either) and stops at the first level deeper than `maxDepth`.
 */
export function inspectData(value: unknown, maxDepth: number = INPUT_LIMITS.nestingDepth): DataShape {
  const shape: DataShape = { depth: 0 };
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value, path: '', depth: 0 }];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const item = stack.pop() as { value: unknown; path: string; depth: number };
    const v = item.value;
    if (typeof v !== 'object' || v === null) continue;
    const depth = item.depth + 1;
    if (depth > maxDepth) {
      shape.tooDeepAt ??= item.path;
      shape.depth = Math.max(shape.depth, depth);
      continue;
    }
    shape.depth = Math.max(shape.depth, depth);
    // YAML aliases make shared (even circular) objects; each is walked once.
    if (seen.has(v)) continue;
    seen.add(v);
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: step(item.path, i), depth });
    } else {
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i];
        if (isForbiddenKey(key)) shape.forbiddenKeyAt ??= step(item.path, key);
        stack.push({ value: (v as Record<string, unknown>)[key], path: step(item.path, key), depth });
      }
    }
  }
  return shape;
}

/**
 * Diagnostics for untrusted data: nesting over the bound and forbidden keys, each with its
 * path (prefixed with `base`).
 */
export function untrustedDataProblems(
  value: unknown,
  base = '',
  extra: Partial<Diagnostic> = {},
  maxDepth: number = INPUT_LIMITS.nestingDepth,
): Diagnostic[] {
  const shape = inspectData(value, maxDepth);
  const join = (p: string): string =>
    base === '' ? p : p === '' ? base : p.startsWith('[') ? `${base}${p}` : `${base}.${p}`;
  const out: Diagnostic[] = [];
  if (shape.tooDeepAt !== undefined)
    out.push({
      severity: 'error',
      code: 'INPUT_TOO_DEEP',
      ...extra,
      path: join(shape.tooDeepAt),
      message: `nested deeper than ${maxDepth} levels (mappings and lists inside each other), the bound`,
    });
  if (shape.forbiddenKeyAt !== undefined)
    out.push({
      severity: 'error',
      code: 'INPUT_FORBIDDEN_KEY',
      ...extra,
      path: join(shape.forbiddenKeyAt),
      message: FORBIDDEN_KEY_MESSAGE,
    });
  return out;
}

/**
 * Sets `value` at a dotted path of `target`, creating mappings on the way (`null` removes the
 * key, and creates nothing); refuses forbidden keys (returns the offending segment) instead of
 * following them.
 */
export function setDottedPath(target: Record<string, unknown>, path: string, value: unknown): string | undefined {
  const keys = path.split('.');
  const bad = keys.find(isForbiddenKey);
  if (bad !== undefined) return bad;
  let at = target;
  for (const key of keys.slice(0, -1)) {
    const next = Object.hasOwn(at, key) ? at[key] : undefined;
    if (typeof next !== 'object' || next === null || Array.isArray(next)) {
      // Removing what is not there changes nothing: a scalar on the way stays as it is.
      if (value === null) return undefined;
      at[key] = {};
    }
    at = at[key] as Record<string, unknown>;
  }
  const last = keys[keys.length - 1];
  if (value === null) delete at[last];
  else at[last] = value;
  return undefined;
}
