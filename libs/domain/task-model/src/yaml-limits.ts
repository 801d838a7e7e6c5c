import { FORBIDDEN_KEY_MESSAGE, INPUT_LIMITS, isForbiddenKey, textProblem } from '@granule/core';
import type { Diagnostic } from '@granule/core';
import { isAlias, isMap, isPair, isScalar, isSeq, parseAllDocuments } from 'yaml';
import type { Document, LineCounter } from 'yaml';

/** Bounds of {@link readYaml}; the defaults are `INPUT_LIMITS`. */
export interface YamlBounds {
  /** Deepest nesting of mappings and lists, aliases expanded. */
  maxDepth?: number;
  /** Nodes of a document with its aliases expanded. */
  maxExpandedNodes?: number;
}

/** Parsed YAML documents with every problem that makes them unsafe or unreadable. */
export interface YamlRead {
  docs: Document.Parsed[];
  /** `toJS()` of each document; empty when there is any error. */
  values: unknown[];
  /** Syntax errors (with `syntaxCode`), text, nesting and alias problems; warnings of the parser. */
  diagnostics: Diagnostic[];
}

interface Measure {
  size: number;
  depth: number;
}

const firstLine = (message: string): string => message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');

/**
 * Reads YAML text a user gave: refuses binary text, syntax errors, nesting deeper than the
 * bound and aliases that expand to more nodes than the bound (an "alias bomb"), each as a
 * diagnostic with the file and line, before anything turns the documents into data. Nothing
 * here recurses per nesting level, so hostile input cannot overflow the stack.
 */
export function readYaml(
  text: string,
  file: string,
  options: { syntaxCode: string; lineCounter: LineCounter; merge?: boolean; multi?: boolean } & YamlBounds,
): YamlRead {
  const maxDepth = options.maxDepth ?? INPUT_LIMITS.nestingDepth;
  const maxNodes = options.maxExpandedNodes ?? INPUT_LIMITS.yamlExpandedNodes;
  const notText = textProblem(text, file);
  if (notText) return { docs: [], values: [], diagnostics: [notText] };
  const diagnostics: Diagnostic[] = [];
  let docs: Document.Parsed[];
  try {
    docs = parseAllDocuments(text, {
      lineCounter: options.lineCounter,
      merge: options.merge ?? false,
      prettyErrors: true,
    }) as Document.Parsed[];
  } catch (err) {
    // The parser reports most failures as document errors; anything thrown is still bad input.
    return {
      docs: [],
      values: [],
      diagnostics: [
        {
          severity: 'error',
          code: options.syntaxCode,
          file,
          message: `cannot read the YAML: ${firstLine(String((err as Error)?.message ?? err))}`,
        },
      ],
    };
  }
  if (!Array.isArray(docs)) docs = [];
  if (!options.multi && docs.length > 1) {
    const line = docs[1].range ? options.lineCounter.linePos(docs[1].range[0]).line : undefined;
    return {
      docs,
      values: [],
      diagnostics: [
        {
          severity: 'error',
          code: options.syntaxCode,
          file,
          message: `YAML syntax error: expected one document, found ${docs.length} (a '---' line starts another)`,
          ...(line ? { line } : {}),
        },
      ],
    };
  }
  for (const doc of docs) {
    for (const e of doc.errors) {
      const line = e.linePos?.[0]?.line;
      const deep = /Maximum call stack/.test(e.message);
      diagnostics.push({
        severity: 'error',
        code: deep ? 'INPUT_TOO_DEEP' : options.syntaxCode,
        message: deep
          ? `nested deeper than ${maxDepth} levels (mappings and lists inside each other), the bound`
          : `YAML syntax error: ${firstLine(e.message)}`,
        file,
        ...(line ? { line } : {}),
      });
    }
    for (const w of doc.warnings) {
      const line = w.linePos?.[0]?.line;
      diagnostics.push({
        severity: 'warning',
        code: `${options.syntaxCode.replace(/_SYNTAX$/, '')}_WARNING`,
        message: firstLine(w.message),
        file,
        ...(line ? { line } : {}),
      });
    }
  }
  if (diagnostics.some((d) => d.severity === 'error')) return { docs, values: [], diagnostics };
  for (const doc of docs) {
    const problem = boundsProblem(doc, options.lineCounter, file, maxDepth, maxNodes);
    if (problem) return { docs, values: [], diagnostics: [...diagnostics, problem] };
  }
  const values: unknown[] = [];
  for (const doc of docs) {
    try {
      // The bounds above already limit what aliases expand to; -1 turns off the parser's own count.
      values.push(doc.toJS({ maxAliasCount: -1 }));
    } catch (err) {
      return {
        docs,
        values: [],
        diagnostics: [
          ...diagnostics,
          {
            severity: 'error',
            code: options.syntaxCode,
            file,
            message: `cannot read the YAML: ${firstLine(String((err as Error)?.message ?? err))}`,
          },
        ],
      };
    }
  }
  return { docs, values, diagnostics };
}

/** The children of a node, aliases not followed: a map's keys and values, a list's items. */
function childrenOf(node: unknown): unknown[] {
  if (isMap(node)) return node.items.flatMap((p) => [p.key, p.value]);
  if (isSeq(node)) return node.items.flatMap((i) => (isPair(i) ? [i.key, i.value] : [i]));
  return [];
}

function measureDocument(doc: Document.Parsed): {
  memo: Map<unknown, Measure>;
  target: Map<unknown, unknown>;
  forbiddenKey?: unknown;
} {
  let forbiddenKey: unknown;
  // Pass 1, document order: which anchored node each alias stands for (the last one before it).
  const target = new Map<unknown, unknown>();
  const anchors = new Map<string, unknown>();
  const order: unknown[] = [doc.contents];
  while (order.length > 0) {
    const node = order.pop();
    if (node === null || node === undefined) continue;
    if (isAlias(node)) {
      target.set(node, anchors.get(node.source));
      continue;
    }
    const anchor = (node as { anchor?: string }).anchor;
    if (anchor) anchors.set(anchor, node);
    if (forbiddenKey === undefined && isMap(node))
      forbiddenKey = node.items.find((p) => isScalar(p.key) && isForbiddenKey(String(p.key.value)))?.key;
    const kids = childrenOf(node);
    for (let i = kids.length - 1; i >= 0; i--) order.push(kids[i]);
  }
  // Pass 2, post-order: each node's size and depth with aliases expanded, each node once.
  const memo = new Map<unknown, Measure>();
  const deref = (n: unknown): unknown => (isAlias(n) ? target.get(n) : n);
  const inProgress = new Set<unknown>();
  const stack: Array<{ node: unknown; open: boolean }> = [{ node: doc.contents, open: false }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    const node = deref(top.node);
    if (node === null || node === undefined || memo.has(node)) {
      stack.pop();
      continue;
    }
    const kids = childrenOf(node);
    if (!top.open) {
      top.open = true;
      inProgress.add(node);
      for (const k of kids) {
        const d = deref(k);
        if (d !== null && d !== undefined && !memo.has(d) && !inProgress.has(d)) stack.push({ node: k, open: false });
      }
      continue;
    }
    let size = 1;
    let depth = 0;
    for (const k of kids) {
      const m = memo.get(deref(k)) ?? { size: 1, depth: 0 };
      size += m.size;
      depth = Math.max(depth, m.depth);
    }
    memo.set(node, { size, depth: isMap(node) || isSeq(node) ? depth + 1 : 0 });
    inProgress.delete(node);
    stack.pop();
  }
  return { memo, target, forbiddenKey };
}

function boundsProblem(
  doc: Document.Parsed,
  lineCounter: LineCounter,
  file: string,
  maxDepth: number,
  maxNodes: number,
): Diagnostic | undefined {
  if (doc.contents === null) return undefined;
  const { memo, target, forbiddenKey } = measureDocument(doc);
  const measureOf = (n: unknown): Measure => memo.get(isAlias(n) ? target.get(n) : n) ?? { size: 1, depth: 0 };
  const lineOf = (n: unknown): number | undefined => {
    const range = (n as { range?: [number, number, number] } | null)?.range;
    return range ? lineCounter.linePos(range[0]).line : undefined;
  };
  const root = measureOf(doc.contents);
  const at = (node: unknown, code: string, message: string): Diagnostic => {
    const line = lineOf(node);
    return { severity: 'error', code, file, message, ...(line ? { line } : {}) };
  };
  if (forbiddenKey !== undefined) return at(forbiddenKey, 'INPUT_FORBIDDEN_KEY', FORBIDDEN_KEY_MESSAGE);
  if (root.depth > maxDepth) {
    // Follow the deepest branch down to the first level past the bound; through an alias the
    // line is the alias's own (where the deep data was pulled in).
    let node: unknown = doc.contents;
    let viaAlias: unknown;
    for (let level = 1; level <= maxDepth; level++) {
      const kids = childrenOf(isAlias(node) ? target.get(node) : node);
      const next = kids.reduce<unknown>((best, k) => (measureOf(k).depth > measureOf(best).depth ? k : best), kids[0]);
      if (next === undefined) break;
      if (isAlias(next)) viaAlias = next;
      node = next;
    }
    return at(
      viaAlias ?? node,
      'INPUT_TOO_DEEP',
      `nested deeper than ${maxDepth} levels (mappings and lists inside each other), the bound`,
    );
  }
  if (root.size > maxNodes) {
    // Follow the biggest branch while it alone is over the bound: the line where the
    // expansion explodes.
    let node: unknown = doc.contents;
    for (;;) {
      const kids = childrenOf(isAlias(node) ? target.get(node) : node);
      const next = kids.find((k) => measureOf(k).size > maxNodes);
      if (next === undefined) break;
      node = next;
    }
    const size = root.size;
    return at(
      node,
      'YAML_TOO_MANY_ALIASES',
      `aliases here expand the document to ${Number.isFinite(size) && size < 1e15 ? Math.round(size).toLocaleString('en-US') : 'more than 10^15'} nodes; the bound is ${maxNodes.toLocaleString('en-US')} (an alias bomb?)`,
    );
  }
  return undefined;
}
