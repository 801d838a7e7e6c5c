import type { NodeSpec } from '@granule/task-model';
import type { GroupSelector } from './strategy.types';

/** True when the selector names no criterion at all (it then selects every node). */
export function isEmptySelector(selector: GroupSelector): boolean {
  return (
    selector.nodeNames.length === 0 &&
    selector.nodeTags.length === 0 &&
    selector.nodeLabels.length === 0 &&
    selector.rackNames.length === 0
  );
}

/**
 * One selector against one node: every non-empty field must match; within a field any value
 * matches. `nodeNames` match the node's `name` or its `uid`.
 */
export function selectorMatches(selector: GroupSelector, node: NodeSpec): boolean {
  if (
    selector.nodeNames.length > 0 &&
    !selector.nodeNames.some((n) => n === node.uid || (node.name !== undefined && n === node.name))
  )
    return false;
  if (selector.nodeTags.length > 0 && !selector.nodeTags.some((t) => node.tags?.includes(t) ?? false)) return false;
  if (
    selector.nodeLabels.length > 0 &&
    !selector.nodeLabels.some(
      (l) => node.labels !== undefined && Object.hasOwn(node.labels, l.key) && node.labels[l.key] === l.value,
    )
  ) {
    return false;
  }
  if (selector.rackNames.length > 0 && !(node.rack !== undefined && selector.rackNames.includes(node.rack)))
    return false;
  return true;
}

/**
 * The uids a group's selectors pick, in the order of `nodes`: the union of the selectors.
 * An empty list, or any selector without criteria, selects every node.
 */
export function selectNodes(selectors: readonly GroupSelector[], nodes: readonly NodeSpec[]): string[] {
  if (selectors.length === 0 || selectors.some(isEmptySelector)) return nodes.map((n) => n.uid);
  return nodes.filter((node) => selectors.some((s) => selectorMatches(s, node))).map((n) => n.uid);
}
