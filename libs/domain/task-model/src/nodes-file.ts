import { LineCounter, type Document } from 'yaml';
import { INPUT_LIMITS, identifierProblem, overLimitMessage, quoteFound } from '@granule/core';
import type { Diagnostic } from '@granule/core';
import { readYaml } from './yaml-limits';
import type { NodeSpec } from './types';

/** What {@link parseNodesFile} found: the valid nodes, and every problem in the file. */
export interface NodesFile {
  /** Nodes in file order; an entry with an error is left out. */
  nodes: NodeSpec[];
  diagnostics: Diagnostic[];
}

const NODE_KEYS = ['uid', 'name', 'roles', 'tags', 'labels', 'rack'];

/**
 * Reads a NODES.yaml: `nodes: [{uid, name?, roles, tags?, labels?, rack?}]`, or the bare list.
 *
 * `uid` is required, a string or a number (kept as a string) and unique; `roles` defaults to
 * `[]`; label values may be any scalar (kept as strings). An unknown key is a warning (NODES
 * files are often generated from inventories that carry more). Every problem is reported with
 * the file, the 1-based line and a key path such as `nodes[2].roles`.
 */
export function parseNodesFile(text: string, file: string): NodesFile {
  const lineCounter = new LineCounter();
  const read = readYaml(text, file, { syntaxCode: 'NODES_YAML_SYNTAX', lineCounter });
  const doc = read.docs[0];
  const diagnostics: Diagnostic[] = [];
  const error = (code: string, message: string, path: (string | number)[] | undefined, line?: number): void => {
    diagnostics.push({
      severity: 'error',
      code,
      message,
      file,
      line: line ?? (path ? lineOf(doc, lineCounter, path) : undefined),
      ...(path && path.length > 0 ? { path: formatPath(path) } : {}),
    });
  };

  if (read.diagnostics.some((d) => d.severity === 'error')) return { nodes: [], diagnostics: read.diagnostics };
  diagnostics.push(...read.diagnostics);

  const data: unknown = doc ? read.values[0] : null;
  let list: unknown;
  let base: (string | number)[];
  if (Array.isArray(data)) {
    list = data;
    base = [];
  } else if (isRecord(data) && 'nodes' in data) {
    list = data.nodes ?? [];
    base = ['nodes'];
    if (!Array.isArray(list)) {
      error('NODES_INVALID_TYPE', `expected a list of nodes, got ${describe(list)}`, base);
      return { nodes: [], diagnostics };
    }
  } else {
    error(
      'NODES_INVALID_DOCUMENT',
      isRecord(data)
        ? `expected a 'nodes' list (nodes: [{uid, roles}]) or a bare list of nodes, got a mapping with ${Object.keys(data).length === 0 ? 'no keys' : `keys ${Object.keys(data).slice(0, 5).join(', ')}`}`
        : `expected a 'nodes' list (nodes: [{uid, roles}]) or a bare list of nodes, got ${describe(data)}`,
      undefined,
      1,
    );
    return { nodes: [], diagnostics };
  }
  if ((list as unknown[]).length > INPUT_LIMITS.planNodes) {
    error(
      'INPUT_TOO_LARGE',
      overLimitMessage(INPUT_LIMITS.planNodes, (list as unknown[]).length, 'nodes'),
      base.length > 0 ? base : undefined,
      base.length > 0 ? undefined : 1,
    );
    return { nodes: [], diagnostics };
  }

  const nodes: NodeSpec[] = [];
  const seen = new Map<string, { index: number }>();
  (list as unknown[]).forEach((entry, index) => {
    const at = [...base, index];
    if (!isRecord(entry)) {
      error('NODES_INVALID_TYPE', `expected a mapping with uid and roles, got ${describe(entry)}`, at);
      return;
    }
    const before = diagnostics.length;
    const warnUnknown = (key: string): void => {
      diagnostics.push({
        severity: 'warning',
        code: 'NODES_UNKNOWN_KEY',
        message: `unknown key '${key}' (expected one of ${NODE_KEYS.join(', ')})`,
        file,
        line: lineOf(doc, lineCounter, [...at, key]),
        path: formatPath([...at, key]),
      });
    };
    for (const key of Object.keys(entry)) if (!NODE_KEYS.includes(key)) warnUnknown(key);

    let uid: string | undefined;
    const rawUid = entry.uid;
    if (rawUid === undefined || rawUid === null) {
      error('NODES_MISSING_FIELD', 'required, expected a string or number', [...at, 'uid']);
    } else if (
      (typeof rawUid === 'string' && rawUid.trim() !== '') ||
      (typeof rawUid === 'number' && Number.isFinite(rawUid))
    ) {
      uid = String(rawUid).trim();
      const problem = identifierProblem('nodeUid', uid);
      if (problem !== undefined) {
        error('NODES_INVALID_UID', problem, [...at, 'uid']);
        uid = undefined;
      }
    } else {
      error('NODES_INVALID_TYPE', `expected a non-empty string or a number, got ${describe(rawUid)}`, [...at, 'uid']);
    }

    const name = optionalString(entry.name, [...at, 'name']);
    const roles = stringList(entry.roles, [...at, 'roles']) ?? [];
    const tags = stringList(entry.tags, [...at, 'tags']);
    const labels = labelMap(entry.labels, [...at, 'labels']);
    const rack = optionalString(entry.rack, [...at, 'rack']);

    if (uid !== undefined) {
      const first = seen.get(uid);
      if (first) {
        // Lines are looked up only here: for thousands of valid nodes that walk is the slow part.
        const line = lineOf(doc, lineCounter, [...at, 'uid']);
        const firstLine = lineOf(doc, lineCounter, [...base, first.index, 'uid']);
        error(
          'NODES_DUPLICATE_UID',
          `duplicate uid '${uid}' at line ${line}, first defined at line ${firstLine} (${formatPath([...base, first.index])})`,
          [...at, 'uid'],
        );
      } else {
        seen.set(uid, { index });
      }
    }
    if (diagnostics.slice(before).some((d) => d.severity === 'error') || uid === undefined) return;
    nodes.push({
      uid,
      ...(name !== undefined ? { name } : {}),
      roles,
      ...(tags !== undefined ? { tags } : {}),
      ...(labels !== undefined ? { labels } : {}),
      ...(rack !== undefined ? { rack } : {}),
    });
  });
  return { nodes, diagnostics };

  function optionalString(value: unknown, path: (string | number)[]): string | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value === 'string') return value;
    error('NODES_INVALID_TYPE', `expected a string, got ${describe(value)}`, path);
    return undefined;
  }

  function stringList(value: unknown, path: (string | number)[]): string[] | undefined {
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value)) {
      error('NODES_INVALID_TYPE', `expected a list of strings, got ${describe(value)}`, path);
      return undefined;
    }
    const out: string[] = [];
    value.forEach((item, i) => {
      if (typeof item === 'string') out.push(item);
      else error('NODES_INVALID_TYPE', `expected a string, got ${describe(item)}`, [...path, i]);
    });
    return out;
  }

  function labelMap(value: unknown, path: (string | number)[]): Record<string, string> | undefined {
    if (value === undefined || value === null) return undefined;
    if (!isRecord(value)) {
      error('NODES_INVALID_TYPE', `expected a mapping of label names to values, got ${describe(value)}`, path);
      return undefined;
    }
    const out: Record<string, string> = {};
    for (const [key, v] of Object.entries(value)) {
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[key] = String(v);
      else
        error('NODES_INVALID_TYPE', `expected a string, number or boolean label value, got ${describe(v)}`, [
          ...path,
          key,
        ]);
    }
    return out;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `"text"`, `5`, `true`, `null`, `a list`, `a map` — how a found value is named in messages. */
function describe(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return quoteFound(value);
}

/** `['nodes', 2, 'roles']` → `nodes[2].roles`; `[2, 'uid']` → `[2].uid`. */
function formatPath(path: (string | number)[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

/** Line of the deepest existing node on `path` (a missing key points at its parent). */
function lineOf(doc: Document | undefined, lineCounter: LineCounter, path: (string | number)[]): number | undefined {
  if (!doc) return undefined;
  for (let depth = path.length; depth >= 0; depth--) {
    const node = depth === 0 ? doc.contents : doc.getIn(path.slice(0, depth), true);
    const range = (node as { range?: [number, number, number] } | undefined)?.range;
    if (range) return lineCounter.linePos(range[0]).line;
  }
  return undefined;
}
