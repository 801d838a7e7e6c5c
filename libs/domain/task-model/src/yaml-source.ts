import { Diagnostic } from '@granule/core';
import { Document, LineCounter, Node, isAlias, isMap, isScalar, isSeq } from 'yaml';
import { readYaml } from './yaml-limits';
import { stageHint } from './stage-ref';

/** A step of a key path: a mapping key or a list index. */
export type PathSegment = string | number;

/**
 * Maps a key path inside a loaded document (`[3, 'parameters', 'timeout']`) to a 1-based line.
 * When the path does not exist all the way, it returns the line of the deepest part that does.
 */
export type LineLocator = (path: readonly PathSegment[]) => number | undefined;

export interface LoadedYaml {
  /** The document as plain data; `null` for an empty file or a syntax error. */
  data: unknown;
  locate: LineLocator;
  diagnostics: Diagnostic[];
}

/** Renders a key path the way messages show it: `[3].parameters.timeout`, `controller.tasks[1]`. */
export function formatPath(path: readonly PathSegment[]): string {
  return path.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
}

/**
 * Parses YAML text into data plus a line locator. Syntax errors become `TASK_YAML_SYNTAX`
 * diagnostics (data is then `null`: a half-read document would only add confusing errors).
 */
export function loadYaml(text: string, file: string): LoadedYaml {
  const lineCounter = new LineCounter();
  const read = readYaml(text, file, { syntaxCode: 'TASK_YAML_SYNTAX', lineCounter, merge: true });
  const lines = text.split(/\r?\n/);
  const diagnostics = read.diagnostics.map((d) =>
    d.code === 'TASK_YAML_SYNTAX' && d.line
      ? { ...d, message: `${d.message}${stageSyntaxHint(lines[d.line - 1] ?? '')}` }
      : d,
  );
  const doc = read.docs[0];
  const locate: LineLocator = doc ? createLocator(doc, lineCounter) : () => undefined;
  const failed = diagnostics.some((d) => d.severity === 'error');
  return { data: failed ? null : (read.values[0] ?? null), locate, diagnostics };
}

// `stage: post_deployment: :50` cannot be read as YAML at all (seed 000 chose `/` for that reason);
// when the broken line is a stage line, say what the stage should look like.
function stageSyntaxHint(lineText: string): string {
  const m = /(?:^|[\s{,-])stage\s*:\s*(.*?)\s*$/.exec(lineText);
  if (!m) return '';
  const value = m[1].replace(/^['"]|['"]$/g, '');
  return `; stage '${value}' is not valid: ${stageHint(value)}`;
}

/** Maps a key path in a parsed YAML document to the 1-based line of that key (or the nearest parent). */
export function createLocator(doc: Document, lineCounter: LineCounter): LineLocator {
  const lineOf = (node: unknown): number | undefined => {
    const range = (node as Node | null)?.range;
    return range ? lineCounter.linePos(range[0]).line : undefined;
  };
  return (path) => {
    let node: unknown = doc.contents;
    let line = lineOf(node);
    for (const seg of path) {
      if (isAlias(node)) node = node.resolve(doc);
      if (isMap(node)) {
        const pair = node.items.find((p) => String(isScalar(p.key) ? p.key.value : p.key) === String(seg));
        if (!pair) return line;
        line = lineOf(pair.key) ?? line;
        node = pair.value;
      } else if (isSeq(node) && typeof seg === 'number' && node.items[seg] !== undefined) {
        node = node.items[seg];
        line = lineOf(node) ?? line;
      } else {
        return line;
      }
    }
    return line;
  };
}
