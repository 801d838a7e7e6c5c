import type { PathSegment } from '@granule/task-model';
import { describeValue, isPlainObject } from './data-file';

/**
 * A small structural schema for the plugin files. Messages read "expected <what>, got <value>"
 * so the validator can put them behind `file: key.path:`.
 */
export type Schema =
  | { t: 'string'; pattern?: RegExp; expected?: string; enum?: readonly string[] }
  | { t: 'integer' | 'number' | 'boolean' | 'any' }
  | { t: 'list'; items?: Schema; minItems?: number; unique?: boolean }
  | {
      t: 'object';
      props?: Record<string, Schema>;
      required?: readonly (string | readonly string[])[];
      values?: Schema;
      keyPattern?: RegExp;
      unknown?: 'warn';
    }
  | { t: 'oneOf'; options: Schema[]; expected: string };

/** One finding of {@link checkSchema}. */
export interface SchemaProblem {
  severity: 'error' | 'warning';
  code: 'PLUGIN_MISSING_FIELD' | 'PLUGIN_BAD_FIELD' | 'PLUGIN_UNKNOWN_FIELD';
  path: PathSegment[];
  message: string;
}

export const str = (extra: Omit<Extract<Schema, { t: 'string' }>, 't'> = {}): Schema => ({ t: 'string', ...extra });
export const list = (items?: Schema, extra: { minItems?: number; unique?: boolean } = {}): Schema => ({
  t: 'list',
  items,
  ...extra,
});
export const strings: Schema = list(str());
export const obj = (
  props: Record<string, Schema>,
  required: readonly (string | readonly string[])[] = [],
  unknown?: 'warn',
): Schema => ({ t: 'object', props, required, unknown });

function expectedOf(s: Schema): string {
  switch (s.t) {
    case 'string':
      return s.expected ?? (s.enum ? `one of ${s.enum.join(', ')}` : 'a string');
    case 'integer':
      return 'an integer';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'true or false';
    case 'list':
      return 'a list';
    case 'object':
      return 'a mapping';
    case 'oneOf':
      return s.expected;
    case 'any':
      return 'a value';
  }
}

/** Checks `value` against `schema`; returns every problem (not only the first). */
export function checkSchema(value: unknown, schema: Schema, path: PathSegment[] = []): SchemaProblem[] {
  const bad = (message: string): SchemaProblem[] => [{ severity: 'error', code: 'PLUGIN_BAD_FIELD', path, message }];
  const got = `expected ${expectedOf(schema)}, got ${describeValue(value)}`;
  switch (schema.t) {
    case 'any':
      return [];
    case 'string':
      if (typeof value !== 'string') return bad(got);
      if (schema.enum && !schema.enum.includes(value)) return bad(got);
      if (schema.pattern && !schema.pattern.test(value)) return bad(got);
      return [];
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value) ? [] : bad(got);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? [] : bad(got);
    case 'boolean':
      return typeof value === 'boolean' ? [] : bad(got);
    case 'oneOf':
      return schema.options.some((o) => checkSchema(value, o, path).every((p) => p.severity !== 'error'))
        ? []
        : bad(got);
    case 'list': {
      if (!Array.isArray(value)) return bad(got);
      const out: SchemaProblem[] = [];
      if (schema.minItems !== undefined && value.length < schema.minItems)
        out.push(
          ...bad(
            `expected at least ${schema.minItems} ${schema.minItems === 1 ? 'entry' : 'entries'}, got ${value.length === 0 ? 'none' : value.length}`,
          ),
        );
      if (schema.unique) {
        value.forEach((v, i) => {
          if (value.findIndex((w) => JSON.stringify(w) === JSON.stringify(v)) < i)
            out.push({
              severity: 'error',
              code: 'PLUGIN_BAD_FIELD',
              path: [...path, i],
              message: `${describeValue(v)} is listed twice`,
            });
        });
      }
      if (schema.items) value.forEach((v, i) => out.push(...checkSchema(v, schema.items as Schema, [...path, i])));
      return out;
    }
    case 'object': {
      if (!isPlainObject(value)) return bad(got);
      const out: SchemaProblem[] = [];
      for (const req of schema.required ?? []) {
        const names = typeof req === 'string' ? [req] : req;
        if (names.every((n) => value[n] === undefined || value[n] === null)) {
          out.push({
            severity: 'error',
            code: 'PLUGIN_MISSING_FIELD',
            path,
            message: `missing required field ${names.map((n) => `'${n}'`).join(' (or ')}${names.length > 1 ? ')' : ''}`,
          });
        }
      }
      for (const [k, v] of Object.entries(value)) {
        const prop = schema.props?.[k];
        if (v === null && prop) continue;
        if (prop) out.push(...checkSchema(v, prop, [...path, k]));
        else if (schema.values) {
          if (schema.keyPattern && !schema.keyPattern.test(k))
            out.push({
              severity: 'error',
              code: 'PLUGIN_BAD_FIELD',
              path: [...path, k],
              message: `'${k}' is not a valid name (expected ${schema.keyPattern.source})`,
            });
          out.push(...checkSchema(v, schema.values, [...path, k]));
        } else if (schema.unknown === 'warn') {
          out.push({
            severity: 'warning',
            code: 'PLUGIN_UNKNOWN_FIELD',
            path: [...path, k],
            message: `unknown field '${k}' is ignored`,
          });
        }
      }
      return out;
    }
  }
}
