import { formatDiagnostic } from '@granule/core';
import type { Diagnostic } from '@granule/core';
import { maskSealed } from '@granule/task-model';
import { parseFormat, toJson, toTable, toYaml, writeOut } from '../output';

/**
 * Prints a service reply as `-o json|yaml|table`. `table` shows `rows` (default: the data,
 * or the data as one row) with `columns`; warnings go to stderr.
 */
export async function printResult(
  reply: unknown,
  format: string,
  table: { rows?: Record<string, unknown>[]; columns?: string[] } = {},
  warnings: Diagnostic[] = [],
): Promise<void> {
  const f = parseFormat(format, ['json', 'yaml', 'table'] as const);
  // Sealed secrets (settings, task parameters, release attributes) show as *** (ADR 0023).
  const data = maskSealed(reply);
  for (const w of warnings) process.stderr.write(`${w.severity}: ${formatDiagnostic(w)}\n`);
  if (f === 'json') return writeOut(toJson(data));
  if (f === 'yaml') return writeOut(toYaml(data));
  const rows = table.rows
    ? maskSealed(table.rows)
    : Array.isArray(data)
      ? (data as Record<string, unknown>[])
      : [data as Record<string, unknown>];
  return writeOut(toTable(rows, table.columns));
}
