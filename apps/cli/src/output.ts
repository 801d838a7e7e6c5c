import { stringify } from 'yaml';
import { UsageError } from '@granule/core';

export type OutputFormat = 'json' | 'yaml' | 'table' | 'text' | 'dot' | 'mermaid';

/**
 * The name `value` goes by among `allowed`: itself, or, since `table` and `text` name the one
 * format for people, the other of the two; undefined when neither is allowed.
 */
export function formatAmong<F extends OutputFormat>(value: string, allowed: readonly F[]): F | undefined {
  const names = value === 'text' || value === 'table' ? [value, value === 'text' ? 'table' : 'text'] : [value];
  return names.find((n) => (allowed as readonly string[]).includes(n)) as F | undefined;
}

export function parseFormat<F extends OutputFormat>(value: string, allowed: readonly F[]): F {
  const format = formatAmong(value, allowed);
  if (format === undefined) throw new UsageError(`-o ${value}: expected one of ${allowed.join(', ')}`);
  return format;
}

export function toJson(data: unknown): string {
  return `${JSON.stringify(data, null, 2)}\n`;
}

export function toYaml(data: unknown): string {
  return stringify(data, { lineWidth: 0 });
}

/** A plain aligned table; cells are stringified, the header is upper-cased. */
export function toTable(rows: Record<string, unknown>[], columns?: string[]): string {
  if (rows.length === 0) return '(none)\n';
  const cols = columns ?? Object.keys(rows[0]);
  const cell = (v: unknown): string =>
    v === undefined || v === null
      ? ''
      : Array.isArray(v)
        ? v.join(',')
        : typeof v === 'object'
          ? JSON.stringify(v)
          : String(v);
  const grid = [cols.map((c) => c.toUpperCase()), ...rows.map((r) => cols.map((c) => cell(r[c])))];
  const widths = cols.map((_, i) => Math.max(...grid.map((line) => line[i].length)));
  return (
    grid
      .map((line) =>
        line
          .map((v, i) => v.padEnd(widths[i]))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

/** Writes a large string to stdout and resolves once it is flushed (pipes included). */
export function writeOut(text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(text, (err) => (err ? reject(err) : resolve()));
  });
}
