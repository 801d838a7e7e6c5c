import { LineCounter, type Document } from 'yaml';
import type { Diagnostic } from '@granule/core';
import { readYaml } from '@granule/task-model';
import type { NodeSpec } from '@granule/task-model';
import {
  CRITERIA_KEYS,
  checkAgainstNodes,
  checkDependencies,
  criterionProblem,
  describe,
  groupPath,
  isRecord,
  labelProblem,
  nameProblem,
  parseLabel,
  reporter,
  type GroupEntry,
  type Report,
  type Segment,
} from './strategy-checks';
import {
  DEPLOYMENT_STRATEGY_SCHEMA,
  type DeploymentGroup,
  type DeploymentStrategy,
  type GroupSelector,
  type LabelSelector,
  type SuccessCriteria,
} from './strategy.types';

/** What {@link parseStrategyDocument} found. */
export interface ParsedStrategy {
  /** Undefined when any error was found. */
  strategy?: DeploymentStrategy;
  /** Every error and warning, with file, line (for text input) and key path. */
  diagnostics: Diagnostic[];
}

const GROUP_KEYS = ['name', 'critical', 'depends_on', 'selectors', 'success_criteria'];
const SELECTOR_KEYS = ['node_names', 'node_tags', 'node_labels', 'rack_names'];

/**
 * Reads a DeploymentStrategy from YAML text or already-parsed data.
 *
 * Accepts the Airship envelope (`schema: shipyard/DeploymentStrategy/v1`, `metadata`,
 * `data.groups`) and a bare `{groups: [...]}`. In a multi-document YAML stream (a site
 * design), the one document with that schema is used. Every problem is reported, each with a
 * path relative to the strategy body, e.g. `groups[1] (compute-nodes-1).success_criteria.percent_successful_nodes`.
 * With `nodes`, the warnings of {@link validateStrategy} about nodes are added.
 */
export function parseStrategyDocument(
  input: string | unknown,
  file: string,
  nodes?: readonly NodeSpec[],
): ParsedStrategy {
  const diagnostics: Diagnostic[] = [];
  let data: unknown = input;
  let locate: ((at: Segment[]) => number | undefined) | undefined;
  // Paths are relative to the strategy body; `data` for the Airship envelope.
  let base: Segment[] = [];

  if (typeof input === 'string') {
    const lineCounter = new LineCounter();
    const read = readYaml(input, file, { syntaxCode: 'STRATEGY_YAML_SYNTAX', lineCounter, multi: true });
    if (read.diagnostics.some((d) => d.severity === 'error'))
      return { diagnostics: read.diagnostics.filter((d) => d.severity === 'error') };
    const docs = read.docs;
    const nonEmpty = docs.filter((d) => d.contents !== null);
    let chosen: Document.Parsed | undefined = nonEmpty[0];
    if (nonEmpty.length > 1) {
      const matching = nonEmpty.filter((d) => d.get('schema') === DEPLOYMENT_STRATEGY_SCHEMA);
      if (matching.length !== 1) {
        const message = `expected one document with schema ${DEPLOYMENT_STRATEGY_SCHEMA} among ${nonEmpty.length} documents, found ${matching.length}`;
        return {
          diagnostics: [
            {
              severity: 'error',
              code: 'STRATEGY_INVALID_DOCUMENT',
              message,
              file,
              ...(matching[1] ? { line: lineAt(matching[1], lineCounter, []) } : {}),
            },
          ],
        };
      }
      chosen = matching[0];
    }
    if (!chosen)
      return {
        diagnostics: [
          {
            severity: 'error',
            code: 'STRATEGY_INVALID_DOCUMENT',
            message: 'expected a DeploymentStrategy document, got an empty file',
            file,
          },
        ],
      };
    data = read.values[docs.indexOf(chosen)];
    const doc = chosen;
    locate = (at) => lineAt(doc, lineCounter, [...base, ...at]);
  }

  const report = reporter(diagnostics, file, (at) => locate?.(at));
  const fail = (message: string, at: Segment[], path = ''): ParsedStrategy => {
    report('error', 'STRATEGY_INVALID_DOCUMENT', at, path, message);
    return { diagnostics };
  };

  if (!isRecord(data))
    return fail(
      `expected a DeploymentStrategy document (schema: ${DEPLOYMENT_STRATEGY_SCHEMA} with data.groups) or a mapping with groups, got ${describe(data)}`,
      [],
    );
  let body: Record<string, unknown>;
  let name: string | undefined;
  if ('schema' in data || 'data' in data) {
    if ('schema' in data && data.schema !== DEPLOYMENT_STRATEGY_SCHEMA)
      return fail(`expected ${DEPLOYMENT_STRATEGY_SCHEMA}, got ${describe(data.schema)}`, ['schema'], 'schema');
    if (!isRecord(data.data))
      return fail(`expected a mapping with groups, got ${describe(data.data)}`, ['data'], 'data');
    body = data.data;
    base = ['data'];
    if (isRecord(data.metadata) && typeof data.metadata.name === 'string') name = data.metadata.name;
  } else if ('groups' in data) {
    body = data;
  } else {
    return fail(
      `expected a DeploymentStrategy document (schema: ${DEPLOYMENT_STRATEGY_SCHEMA} with data.groups) or a mapping with groups, got a mapping without groups (keys: ${Object.keys(data).slice(0, 5).join(', ')})`,
      [],
    );
  }
  for (const key of Object.keys(body)) {
    if (key !== 'groups')
      report('warning', 'STRATEGY_UNKNOWN_KEY', [key], key, `unknown key '${key}' (expected groups)`);
  }
  if (!('groups' in body)) return fail('required, expected a list of groups', ['groups'], 'groups');
  if (!Array.isArray(body.groups) || body.groups.length === 0)
    return fail(`expected a non-empty list of groups, got ${describe(body.groups)}`, ['groups'], 'groups');

  const entries: GroupEntry[] = [];
  body.groups.forEach((raw: unknown, index: number) => {
    const entry = readGroup(raw, index, report);
    if (entry) entries.push(entry);
  });
  checkDependencies(entries, report);
  if (nodes) checkAgainstNodes(entries, nodes, report);

  if (diagnostics.some((d) => d.severity === 'error')) return { diagnostics };
  return { strategy: { ...(name !== undefined ? { name } : {}), groups: entries.map((e) => e.group) }, diagnostics };
}

/** Reads one group, reporting every problem; the result keeps only the valid parts. */
function readGroup(raw: unknown, index: number, report: Report): GroupEntry | undefined {
  if (!isRecord(raw)) {
    report(
      'error',
      'STRATEGY_INVALID_FIELD',
      ['groups', index],
      `groups[${index}]`,
      `expected a mapping with ${GROUP_KEYS.join(', ')}, got ${describe(raw)}`,
    );
    return undefined;
  }
  const where = groupPath(index, raw.name);
  const at = (...rest: Segment[]): Segment[] => ['groups', index, ...rest];
  const invalid = (rest: Segment[], message: string, code = 'STRATEGY_INVALID_FIELD'): void => {
    report(
      'error',
      code,
      at(...rest),
      [where, ...rest]
        .map((s) => (typeof s === 'number' ? `[${s}]` : s))
        .join('.')
        .replace(/\.\[/g, '['),
      message,
    );
  };

  for (const key of Object.keys(raw)) {
    if (!GROUP_KEYS.includes(key))
      invalid([key], `unknown key '${key}' (expected ${GROUP_KEYS.join(', ')})`, 'STRATEGY_UNKNOWN_KEY');
  }
  const nameMessage = nameProblem(raw.name);
  if (nameMessage) invalid(['name'], nameMessage);

  let critical = false;
  if (raw.critical === undefined) invalid(['critical'], 'required, expected true or false');
  else if (typeof raw.critical !== 'boolean')
    invalid(['critical'], `expected true or false, got ${describe(raw.critical)}`);
  else critical = raw.critical;

  const dependsOn: string[] = [];
  if (raw.depends_on === undefined) invalid(['depends_on'], 'required, expected a list of group names (may be empty)');
  else if (!Array.isArray(raw.depends_on))
    invalid(['depends_on'], `expected a list of group names, got ${describe(raw.depends_on)}`);
  else
    raw.depends_on.forEach((d: unknown, i: number) => {
      if (typeof d === 'string' && d.trim() !== '') dependsOn.push(d);
      else invalid(['depends_on', i], `expected a group name, got ${describe(d)}`);
    });

  const selectors: GroupSelector[] = [];
  if (raw.selectors === undefined) invalid(['selectors'], 'required, expected a list of selectors (may be empty)');
  else if (!Array.isArray(raw.selectors))
    invalid(['selectors'], `expected a list of selectors, got ${describe(raw.selectors)}`);
  else
    raw.selectors.forEach((s: unknown, i: number) => {
      const selector = readSelector(s, ['selectors', i], invalid);
      if (selector) selectors.push(selector);
    });

  let successCriteria: SuccessCriteria | undefined;
  if ('success_criteria' in raw) successCriteria = readCriteria(raw.success_criteria, invalid);

  const group: DeploymentGroup = {
    name: nameMessage ? '' : (raw.name as string),
    critical,
    dependsOn,
    selectors,
    ...(successCriteria ? { successCriteria } : {}),
  };
  return { index, group, named: nameMessage === undefined };
}

type Invalid = (rest: Segment[], message: string, code?: string) => void;

function readSelector(raw: unknown, at: Segment[], invalid: Invalid): GroupSelector | undefined {
  if (!isRecord(raw)) {
    invalid(at, `expected a mapping with ${SELECTOR_KEYS.join(', ')} (any of them), got ${describe(raw)}`);
    return undefined;
  }
  for (const key of Object.keys(raw)) {
    if (!SELECTOR_KEYS.includes(key))
      invalid([...at, key], `unknown key '${key}' (expected ${SELECTOR_KEYS.join(', ')})`, 'STRATEGY_UNKNOWN_KEY');
  }
  const list = (key: string): unknown[] => {
    const value = raw[key];
    if (value === undefined || value === null) return [];
    if (Array.isArray(value)) return value;
    invalid([...at, key], `expected a list, got ${describe(value)}`);
    return [];
  };
  const strings = (key: string, allowNumbers: boolean): string[] =>
    list(key).flatMap((v, i) => {
      if (typeof v === 'string' && v !== '') return [v];
      if (allowNumbers && typeof v === 'number') return [String(v)];
      invalid([...at, key, i], `expected a non-empty string, got ${describe(v)}`);
      return [];
    });

  const nodeLabels: LabelSelector[] = [];
  list('node_labels').forEach((v, i) => {
    if (typeof v === 'string') {
      const label = parseLabel(v);
      if (label) nodeLabels.push(label);
      else invalid([...at, 'node_labels', i], labelProblem(describe(v)), 'STRATEGY_INVALID_LABEL');
    } else if (isRecord(v) && Object.keys(v).length > 0) {
      // The seed's form: `- ucp_control_plane: enabled`.
      for (const [key, value] of Object.entries(v)) {
        const text =
          typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : '';
        const label = text.includes(':') ? undefined : parseLabel(`${key}:${text}`);
        if (label) nodeLabels.push(label);
        else
          invalid([...at, 'node_labels', i, key], labelProblem(`${key}: ${describe(value)}`), 'STRATEGY_INVALID_LABEL');
      }
    } else {
      invalid([...at, 'node_labels', i], labelProblem(describe(v)), 'STRATEGY_INVALID_LABEL');
    }
  });
  return {
    nodeNames: strings('node_names', true),
    nodeTags: strings('node_tags', false),
    nodeLabels,
    rackNames: strings('rack_names', false),
  };
}

function readCriteria(raw: unknown, invalid: Invalid): SuccessCriteria | undefined {
  if (!isRecord(raw) || Object.keys(raw).length === 0) {
    invalid(
      ['success_criteria'],
      `expected a mapping with at least one of ${CRITERIA_KEYS.join(', ')}, got ${describe(raw)}`,
    );
    return undefined;
  }
  const criteria: SuccessCriteria = {};
  for (const [key, value] of Object.entries(raw)) {
    if (!(CRITERIA_KEYS as readonly string[]).includes(key)) {
      invalid(
        ['success_criteria', key],
        `unknown key '${key}' (expected ${CRITERIA_KEYS.join(', ')})`,
        'STRATEGY_UNKNOWN_KEY',
      );
      continue;
    }
    const problem = criterionProblem(key as (typeof CRITERIA_KEYS)[number], value);
    if (problem) {
      invalid(['success_criteria', key], problem);
      continue;
    }
    const n = value as number;
    if (key === 'percent_successful_nodes') criteria.percentSuccessfulNodes = n;
    else if (key === 'minimum_successful_nodes') criteria.minimumSuccessfulNodes = n;
    else criteria.maximumFailedNodes = n;
  }
  return criteria;
}

/** Line of the deepest existing node on `path` (a missing key points at its parent). */
function lineAt(doc: Document, lineCounter: LineCounter, path: Segment[]): number | undefined {
  for (let depth = path.length; depth >= 0; depth--) {
    const node = depth === 0 ? doc.contents : doc.getIn(path.slice(0, depth), true);
    const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
    if (range) return lineCounter.linePos(range[0]).line;
  }
  return undefined;
}
