import { FieldProblem, TaskFieldError, describeValue } from './task-diagnostics';
import { CrossDependency, NodeSpec, RolePattern, RoleSelector } from './types';

/** Uid of the Granule master host; `role: master` selects it. */
export const MASTER_NODE_UID = 'master';

/** A compiled selector: true when the node is selected. */
export type NodePredicate = (node: NodeSpec) => boolean;

/**
 * Reads a role list (`role`, `roles`, `groups`, `tags`): `'*'` (every node), `'master'`,
 * a role name, a `/regex/`, or a list of names and `/regex/`es. `null`/`undefined` and an empty
 * list give `null` (the task names no node). Throws `TaskFieldError` (`TASK_BAD_ROLE_PATTERN`
 * for an invalid regex, `TASK_BAD_FIELD` for a wrong value).
 */
export function parseRoleSelector(value: unknown): RoleSelector | null {
  const problems: FieldProblem[] = [];
  const selector = readRoleSelector([value], (p) => problems.push(p));
  if (problems.length > 0) throw new TaskFieldError(problems[0].code, problems.map((p) => p.message).join('; '));
  return selector;
}

/**
 * The union of several role values (a task may set `role`, `roles`, `groups` and `tags` together).
 * Each problem is reported with the index of the value and, for a list, of the item.
 */
export function readRoleSelector(
  values: unknown[],
  report: (problem: FieldProblem, valueIndex: number, itemIndex?: number) => void,
): RoleSelector | null {
  let all = false;
  let master = false;
  const patterns: RolePattern[] = [];
  const seen = new Set<string>();
  const addItem = (item: unknown, itemIndex: number | undefined, valueIndex: number): void => {
    if (typeof item !== 'string' || item.trim() === '') {
      report(
        {
          code: 'TASK_BAD_FIELD',
          message: `expected a role name, '*', 'master' or a /regex/, got ${describeValue(item)}`,
        },
        valueIndex,
        itemIndex,
      );
      return;
    }
    if (item === '*') all = true;
    else if (item === MASTER_NODE_UID) master = true;
    else if (isRegexLiteral(item)) {
      const source = item.slice(1, -1);
      const error = regexError(source);
      if (error)
        report(
          { code: 'TASK_BAD_ROLE_PATTERN', message: `role pattern '${item}' is not a valid regex: ${error}` },
          valueIndex,
          itemIndex,
        );
      else if (!seen.has(item)) patterns.push({ kind: 'regex', source });
      seen.add(item);
    } else if (!seen.has(item)) {
      seen.add(item);
      patterns.push({ kind: 'name', name: item });
    }
  };
  values.forEach((value, valueIndex) => {
    if (value === null || value === undefined) return;
    if (Array.isArray(value)) value.forEach((item, i) => addItem(item, i, valueIndex));
    else addItem(value, undefined, valueIndex);
  });
  if (all) return master ? { kind: 'all', withMaster: true } : { kind: 'all' };
  if (master && patterns.length === 0) return { kind: 'master' };
  // `master` next to other roles stays a name pattern; matchesNode gives it the master's meaning.
  if (master) patterns.push({ kind: 'name', name: MASTER_NODE_UID });
  return patterns.length === 0 ? null : { kind: 'patterns', patterns };
}

export function isRegexLiteral(text: string): boolean {
  return text.length >= 2 && text.startsWith('/') && text.endsWith('/');
}

/** The JS error message when `source` is not a valid regex, else undefined. */
export function regexError(source: string): string | undefined {
  try {
    new RegExp(source);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/** Fuel matches with Python's `re.match`: anchored at the start, not at the end. */
function compilePattern(source: string): RegExp {
  return new RegExp(`^(?:${source})`);
}

/** True when the selector names the master host (`master` alone or inside a role list). */
export function selectsMaster(selector: RoleSelector | null | undefined): boolean {
  if (!selector) return false;
  if (selector.kind === 'master' || (selector.kind === 'all' && selector.withMaster)) return true;
  return selector.kind === 'patterns' && selector.patterns.some((p) => p.kind === 'name' && p.name === MASTER_NODE_UID);
}

const predicates = new WeakMap<RoleSelector, NodePredicate>();
// '*' is the deployment's nodes: the master host is not one of them (Fuel's resolve('*')).
const matchAll: NodePredicate = (node) => node.uid !== MASTER_NODE_UID;
const matchMaster: NodePredicate = (node) => node.uid === MASTER_NODE_UID;

/**
 * Compiles a selector into a predicate once (regexes built, names in a Set); cached per selector
 * object, so calling it again for the same selector is a WeakMap lookup.
 */
export function compileRoleSelector(selector: RoleSelector): NodePredicate {
  if (selector.kind === 'all') return selector.withMaster ? () => true : matchAll;
  if (selector.kind === 'master') return matchMaster;
  let predicate = predicates.get(selector);
  if (predicate) return predicate;
  const names = new Set<string>();
  const regexes: RegExp[] = [];
  for (const p of selector.patterns) {
    if (p.kind === 'name') names.add(p.name);
    else regexes.push(compilePattern(p.source));
  }
  const includesMaster = names.has(MASTER_NODE_UID);
  const matchesName = (name: string): boolean => {
    if (names.has(name)) return true;
    for (const re of regexes) if (re.test(name)) return true;
    return false;
  };
  predicate = (node) => {
    if (includesMaster && node.uid === MASTER_NODE_UID) return true;
    for (const role of node.roles) if (matchesName(role)) return true;
    if (node.tags) for (const tag of node.tags) if (matchesName(tag)) return true;
    return false;
  };
  predicates.set(selector, predicate);
  return predicate;
}

/**
 * True when `selector` selects `node`: `all` selects every node but the master host, `master` only the node with
 * uid `master`, a pattern list every node with a role or tag equal to a name or matched by a
 * regex (anchored at the start, like Fuel). A `master` name inside a list also selects the master.
 */
export function matchesNode(selector: RoleSelector, node: NodeSpec): boolean {
  return compileRoleSelector(selector)(node);
}

const nameRegexes = new Map<string, RegExp>();

/** True when the task id `taskId` is one a cross-dependency names (exact id or anchored regex). */
export function matchesTaskName(dep: Pick<CrossDependency, 'name' | 'isRegex'>, taskId: string): boolean {
  if (!dep.isRegex) return dep.name === taskId;
  let re = nameRegexes.get(dep.name);
  if (!re) {
    re = compilePattern(dep.name);
    nameRegexes.set(dep.name, re);
  }
  return re.test(taskId);
}
