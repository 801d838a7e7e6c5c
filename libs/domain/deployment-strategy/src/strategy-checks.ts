// Checks shared by the document parser (raw YAML values) and validateStrategy (typed records).
import type { Diagnostic, Severity } from '@granule/core';
import { quoteFound } from '@granule/core';
import type { NodeSpec } from '@granule/task-model';
import { isEmptySelector, selectNodes } from './node-selector';
import type { CriterionName, DeploymentGroup, LabelSelector } from './strategy.types';

/** A key path segment; numbers are list indexes. */
export type Segment = string | number;

/** Records one finding; `at` is the path relative to the strategy (for line lookup), null for no place in the file. */
export type Report = (severity: Severity, code: string, at: Segment[] | null, path: string, message: string) => void;

export const CRITERIA_KEYS: readonly CriterionName[] = [
  'percent_successful_nodes',
  'minimum_successful_nodes',
  'maximum_failed_nodes',
];

/** `"text"`, `5`, `true`, `null`, `a list`, `a mapping` — how a found value is named in messages. */
export function describe(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return value.length === 0 ? 'an empty list' : 'a list';
  if (typeof value === 'object') return Object.keys(value).length === 0 ? 'an empty mapping' : 'a mapping';
  return quoteFound(value);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `groups[1] (compute-nodes-1)`, or `groups[1]` when the group has no usable name. */
export function groupPath(index: number, name: unknown): string {
  return typeof name === 'string' && name.trim() !== '' ? `groups[${index}] (${name})` : `groups[${index}]`;
}

/** The message for a bad group name, or undefined when it is fine. */
export function nameProblem(name: unknown): string | undefined {
  if (name === undefined) return 'required, expected a non-empty string';
  return typeof name === 'string' && name.trim() !== ''
    ? undefined
    : `expected a non-empty string, got ${describe(name)}`;
}

/** The message for a bad criterion value, or undefined when it is fine. */
export function criterionProblem(key: CriterionName, value: unknown): string | undefined {
  const isInt = typeof value === 'number' && Number.isInteger(value);
  if (key === 'percent_successful_nodes')
    return isInt && value >= 0 && value <= 100 ? undefined : `expected an integer 0-100, got ${describe(value)}`;
  return isInt && value >= 0 ? undefined : `expected an integer >= 0, got ${describe(value)}`;
}

/** `"key:value"` → label; exactly one colon, both sides non-empty after trimming. */
export function parseLabel(text: string): LabelSelector | undefined {
  const parts = text.split(':');
  if (parts.length !== 2) return undefined;
  const [key, value] = parts.map((p) => p.trim());
  return key !== '' && value !== '' ? { key, value } : undefined;
}

export function labelProblem(found: string): string {
  return `expected a label "key:value" with one colon and a non-empty key and value, got ${found}`;
}

/** A group and where it sits in the document, for paths that keep the written index. */
export interface GroupEntry {
  index: number;
  group: DeploymentGroup;
  /** False when the name is missing or invalid (already reported); such a group takes no part in name checks. */
  named: boolean;
}

/**
 * Name uniqueness, unknown dependencies and cycles. A cycle is reported once per strongly
 * connected component, starting from its first group in document order, following
 * `depends_on` in written order: `a -> b -> c -> a` means a depends on b, b on c, c on a.
 */
export function checkDependencies(entries: readonly GroupEntry[], report: Report): void {
  const byName = new Map<string, GroupEntry>();
  for (const e of entries) {
    if (!e.named) continue;
    const first = byName.get(e.group.name);
    if (first) {
      report(
        'error',
        'STRATEGY_DUPLICATE_GROUP',
        ['groups', e.index, 'name'],
        `${groupPath(e.index, e.group.name)}.name`,
        `duplicate group name '${e.group.name}', first used by groups[${first.index}]`,
      );
    } else {
      byName.set(e.group.name, e);
    }
  }
  for (const e of entries) {
    e.group.dependsOn.forEach((dep, i) => {
      if (!byName.has(dep)) {
        report(
          'error',
          'STRATEGY_UNKNOWN_DEPENDENCY',
          ['groups', e.index, 'depends_on', i],
          `${groupPath(e.index, e.group.name)}.depends_on[${i}]`,
          `unknown group '${dep}' (the groups are ${[...byName.keys()].join(', ')})`,
        );
      }
    });
  }
  for (const cycle of findCycles([...byName.values()].sort((a, b) => a.index - b.index).map((e) => e.group))) {
    const start = byName.get(cycle[0]) as GroupEntry;
    report(
      'error',
      'STRATEGY_DEPENDENCY_CYCLE',
      ['groups', start.index, 'depends_on'],
      `${groupPath(start.index, start.group.name)}.depends_on`,
      `circular dependency: ${cycle.join(' -> ')}`,
    );
  }
}

/** Each cycle as the names on it, first name repeated at the end; dependencies on unknown groups are ignored. */
export function findCycles(groups: readonly DeploymentGroup[]): string[][] {
  const deps = new Map(groups.map((g) => [g.name, g.dependsOn.filter((d, i, all) => all.indexOf(d) === i)]));
  const order = new Map(groups.map((g, i) => [g.name, i]));
  // Tarjan's strongly connected components.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of deps.get(v) ?? []) {
      if (!deps.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      components.push(component);
    }
  };
  for (const g of groups) if (!index.has(g.name)) visit(g.name);

  const cycles: string[][] = [];
  for (const component of components) {
    const members = new Set(component);
    const start = component.reduce((a, b) => ((order.get(a) as number) <= (order.get(b) as number) ? a : b));
    if (component.length === 1 && !(deps.get(start) ?? []).includes(start)) continue;
    cycles.push([...walkBack(start, members, deps), start]);
  }
  return cycles.sort((a, b) => (order.get(a[0]) as number) - (order.get(b[0]) as number));
}

/** A path start -> ... -> (back to start) inside one component, depth first in written order. */
function walkBack(start: string, members: Set<string>, deps: Map<string, string[]>): string[] {
  const path: string[] = [];
  const seen = new Set<string>();
  const dfs = (v: string): boolean => {
    path.push(v);
    seen.add(v);
    for (const w of deps.get(v) ?? []) {
      if (w === start) return true;
      if (members.has(w) && !seen.has(w) && dfs(w)) return true;
    }
    path.pop();
    return false;
  };
  dfs(start);
  return path;
}

/**
 * Warnings that need the node list: a group that selects no node, a `node_names` entry that
 * names no node, a node no group selects (it will not be deployed).
 */
export function checkAgainstNodes(entries: readonly GroupEntry[], nodes: readonly NodeSpec[], report: Report): void {
  const covered = new Set<string>();
  for (const e of entries) {
    const where = groupPath(e.index, e.group.name);
    const selected = selectNodes(e.group.selectors, nodes);
    selected.forEach((uid) => covered.add(uid));
    if (selected.length === 0)
      report(
        'warning',
        'STRATEGY_EMPTY_GROUP',
        ['groups', e.index, 'selectors'],
        `${where}.selectors`,
        'selects no node',
      );
    e.group.selectors.forEach((s, si) => {
      if (isEmptySelector(s)) return;
      s.nodeNames.forEach((n, ni) => {
        if (!nodes.some((node) => node.uid === n || node.name === n)) {
          report(
            'warning',
            'STRATEGY_UNKNOWN_NODE',
            ['groups', e.index, 'selectors', si, 'node_names', ni],
            `${where}.selectors[${si}].node_names[${ni}]`,
            `no node has the name or uid '${n}'`,
          );
        }
      });
    });
  }
  for (const node of nodes) {
    if (!covered.has(node.uid))
      report(
        'warning',
        'STRATEGY_NODE_UNGROUPED',
        null,
        '',
        `node '${node.uid}' is selected by no group and will not be deployed`,
      );
  }
}

/** Builds a `Report` that appends to `diagnostics`; `locate` finds the line of a path when known. */
export function reporter(
  diagnostics: Diagnostic[],
  file: string | undefined,
  locate?: (at: Segment[]) => number | undefined,
): Report {
  return (severity, code, at, path, message) => {
    const line = at === null ? undefined : locate?.(at);
    diagnostics.push({
      severity,
      code,
      message,
      ...(file !== undefined ? { file } : {}),
      ...(line !== undefined ? { line } : {}),
      ...(path !== '' ? { path } : {}),
    });
  };
}
