import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { LineCounter } from 'yaml';
import { InvalidInputError, decodeTextFile } from '@granule/core';
import { readYaml } from '@granule/task-model';
import type { Diagnostic } from '@granule/core';
import { unreadable } from '../messages';

/**
 * Reads a text file the user named; a failure is an input error naming the file. A binary file,
 * a file that is not UTF-8 (UTF-16 included) or one over the size bound is refused with the line
 * of the first bad byte; its bytes are never printed.
 */
export async function readInputFile(file: string): Promise<string> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(file);
  } catch (err) {
    throw unreadable(file, err);
  }
  const decoded = decodeTextFile(bytes, file);
  if ('problem' in decoded) throw new InvalidInputError([decoded.problem]);
  return decoded.text;
}

/**
 * Parses YAML (or JSON) text into data with the same checks as the task and node files
 * (syntax, nesting, alias bombs): every problem is an input error naming the file and line.
 */
export function parseYamlText(text: string, file: string, syntaxCode: string): unknown {
  const read = readYaml(text, file, { syntaxCode, lineCounter: new LineCounter() });
  throwOnErrors(read.diagnostics);
  return read.values[0] ?? null;
}

/** A file, or every `*.yaml` / `*.yml` under a folder (recursively, in sorted order). */
export async function expandYamlPaths(input: string): Promise<string[]> {
  let info;
  try {
    info = await stat(input);
  } catch (err) {
    throw unreadable(input, err);
  }
  if (!info.isDirectory()) return [input];
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (/\.ya?ml$/.test(entry.name)) out.push(full);
    }
  };
  await walk(input);
  return out;
}

/** Throws `InvalidInputError` when any diagnostic is an error; returns the warnings otherwise. */
export function throwOnErrors(diagnostics: Diagnostic[]): Diagnostic[] {
  const errors = diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) throw new InvalidInputError(errors);
  return diagnostics.filter((d) => d.severity === 'warning');
}

/** Splits `a,b` and repeated flags into one list. */
export function commaList(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  ];
}
