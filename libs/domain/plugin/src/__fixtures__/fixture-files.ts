import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { MemoryPluginFiles } from '../memory-plugin-files';

/**
 * A fixture is one YAML file describing a small package: `files` (path → content; a path
 * ending in `/` is an empty directory), optionally `extends` a base fixture, `remove`s some of
 * its files, and states what validation must report in `expect` (`valid` and the diagnostics
 * as "<severity> <code> <file:line: path: message>").
 */
export interface Fixture {
  rule?: string;
  extends?: string;
  remove?: string[];
  files?: Record<string, string>;
  expect?: { valid: boolean; diagnostics: string[] };
}

export function readFixture(name: string): Fixture {
  return parse(readFileSync(path.join(__dirname, `${name}.yaml`), 'utf8')) as Fixture;
}

/** The files of a fixture, with its base's files underneath. */
export function fixtureFiles(name: string): MemoryPluginFiles {
  const collect = (n: string): Record<string, string> => {
    const f = readFixture(n);
    const base = f.extends ? collect(f.extends) : {};
    for (const r of f.remove ?? []) delete base[r];
    return { ...base, ...(f.files ?? {}) };
  };
  return new MemoryPluginFiles(collect(name), name);
}
