import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { InvalidInputError } from '@granule/core';
import type { Diagnostic } from '@granule/core';
import { unreadable } from '../messages';

/** Reads a text file the user named; a failure is an input error naming the file. */
export async function readInputFile(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw unreadable(file, err);
  }
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
