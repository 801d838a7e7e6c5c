import { Diagnostic } from '@granule/core';
import { Document, LineCounter, Node, isAlias, isMap, isScalar, isSeq, parseDocument } from 'yaml';
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
  const doc = parseDocument(text, { lineCounter, merge: true, prettyErrors: true });
  const diagnostics: Diagnostic[] = [];
  const lines = text.split(/\r?\n/);
  for (const e of doc.errors) {
    const line = e.linePos?.[0]?.line;
    diagnostics.push({
      severity: 'error',
      code: 'TASK_YAML_SYNTAX',
      message: `YAML syntax error: ${firstLine(e.message)}${line ? stageSyntaxHint(lines[line - 1] ?? '') : ''}`,
      file,
      line,
    });
  }
  for (const w of doc.warnings) {
    diagnostics.push({
      severity: 'warning',
      code: 'TASK_YAML_WARNING',
      message: firstLine(w.message),
      file,
      line: w.linePos?.[0]?.line,
    });
  }
  const locate = createLocator(doc, lineCounter);
  return { data: doc.errors.length > 0 ? null : (doc.toJS({ maxAliasCount: 10000 }) ?? null), locate, diagnostics };
}

function firstLine(message: string): string {
  return message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
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
