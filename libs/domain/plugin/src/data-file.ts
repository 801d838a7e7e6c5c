import type { Diagnostic } from '@granule/core';
import { createLocator, readYaml } from '@granule/task-model';
import type { LineLocator, PathSegment } from '@granule/task-model';
import { LineCounter } from 'yaml';

/** A data file read from a plugin: its data, a key-path → line locator, and read problems. */
export interface DataFile {
  file: string;
  data: unknown;
  locate: LineLocator;
  diagnostics: Diagnostic[];
}

/** Renders a key path the way messages show it: `[3].parameters.timeout`, `releases[0].graphs[1]`. */
export function formatPath(path: readonly PathSegment[]): string {
  return path.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
}

/** Extensions the loader reads as data; any other file behind a `*_path` key is left as a path. */
export const DATA_FILE_RE = /\.(ya?ml|json)$/i;

const noLines: LineLocator = () => undefined;

/**
 * Parses YAML (JSON is YAML too) into plain data with a line locator. A syntax error becomes a
 * `PLUGIN_YAML_SYNTAX` diagnostic and the data is `null`. The stage-typo hint of seed 000 is
 * added when the broken line is a `stage:` line (`post_deployment:: 50` cannot be parsed).
 */
export function parseDataFile(text: string, file: string): DataFile {
  const lineCounter = new LineCounter();
  const read = readYaml(text, file, { syntaxCode: 'PLUGIN_YAML_SYNTAX', lineCounter, merge: true });
  const lines = text.split(/\r?\n/);
  const diagnostics = read.diagnostics
    .filter((d) => d.severity === 'error')
    .map((d) =>
      d.code === 'PLUGIN_YAML_SYNTAX' && d.line
        ? { ...d, message: `${d.message}${stageLineHint(lines[d.line - 1] ?? '')}` }
        : d,
    );
  const doc = read.docs[0];
  if (diagnostics.length > 0 || !doc) return { file, data: null, locate: noLines, diagnostics };
  return { file, data: read.values[0] ?? null, locate: createLocator(doc, lineCounter), diagnostics };
}

function stageLineHint(lineText: string): string {
  const m = /(?:^|[\s{,-])stage\s*:\s*(.*?)\s*$/.exec(lineText);
  if (!m) return '';
  const value = m[1].replace(/^['"]|['"]$/g, '');
  return `; stage '${value}' is not valid: ${pluginStageHint(value)}`;
}

/** Advice for a bad plugin stage: the corrected text when it can be guessed (seed 000). */
export function pluginStageHint(raw: string): string {
  const m = /^(pre_deployment|post_deployment|deployment)((?:[\s:/+\-.\d].*)?)$/.exec(raw.trim());
  if (m && m[1] !== 'deployment') {
    const rest = m[2].replace(/^[\s:/]+/, '').trim();
    if (rest === '') return `write it as '${m[1]}'`;
    if (/^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(rest)) return `write it as '${m[1]}/${rest}'`;
    return `the postfix after '/' must be a number, e.g. '${m[1]}/50'`;
  }
  return `a plugin task runs in pre_deployment or post_deployment, optionally with a numeric postfix like 'post_deployment/50'`;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Renders a value for "expected X, got Y" messages. */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}
