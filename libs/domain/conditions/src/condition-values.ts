import type { ConditionValue } from './condition.types';

/**
 * Reads `path` from `root` through own properties only, so `constructor`, `__proto__` and other
 * inherited names never reach a prototype. Anything missing (or not data) reads as null.
 */
export function readOwnPath(root: unknown, path: readonly string[]): ConditionValue {
  let current: unknown = root;
  for (const key of path) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, key)) return null;
    current = (current as Record<string, unknown>)[key];
  }
  return toValue(current);
}

function toValue(value: unknown): ConditionValue {
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      return value;
    case 'bigint':
      return Number(value);
    case 'object':
      return value as ConditionValue;
    default:
      return null;
  }
}

/** Python-like truthiness: null, false, 0, NaN, '', [] and {} are false. */
export function isTruthy(value: ConditionValue): boolean {
  if (value === null) return false;
  switch (typeof value) {
    case 'boolean':
      return value;
    case 'number':
      return value !== 0 && !Number.isNaN(value);
    case 'string':
      return value.length > 0;
    default:
      return Array.isArray(value) ? value.length > 0 : Object.keys(value).length > 0;
  }
}

/** Equality by value: lists and objects compare element by element / key by key. */
export function valuesEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => valuesEqual(item, b[i]));
  }
  const aKeys = Object.keys(a);
  if (aKeys.length !== Object.keys(b).length) return false;
  return aKeys.every(
    (key) =>
      Object.hasOwn(b, key) && valuesEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
  );
}

/** How a value is named in evaluation error messages: its type, and the value when short. */
export function describeValue(value: ConditionValue): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  switch (typeof value) {
    case 'string': {
      const shown = value.length > 40 ? `${value.slice(0, 37)}...` : value;
      return `string ${JSON.stringify(shown)}`;
    }
    case 'number':
    case 'boolean':
      return `${typeof value} ${String(value)}`;
    default:
      return 'an object';
  }
}
