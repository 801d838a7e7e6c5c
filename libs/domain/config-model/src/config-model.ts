import {
  FORBIDDEN_KEY_MESSAGE,
  IDENTIFIER_RULES,
  InvalidInputError,
  isForbiddenKey,
  setDottedPath,
} from '@granule/core';
import type { Diagnostic } from '@granule/core';

/** Lifecycle of an environment (a Fuel cluster). */
export const ENVIRONMENT_STATUSES = [
  'new',
  'deployment',
  'operational',
  'partially_deployed',
  'error',
  'stopped',
] as const;
export type EnvironmentStatus = (typeof ENVIRONMENT_STATUSES)[number];

/** Lifecycle of a node, from discovery to ready. */
export const NODE_STATUSES = [
  'discover',
  'provisioning',
  'provisioned',
  'deploying',
  'ready',
  'error',
  'offline',
  'stopped',
] as const;
export type NodeStatus = (typeof NODE_STATUSES)[number];

/** Names operators give environments, plugins' graph types and strategies: no spaces or slashes. */
export const NAME_RE = IDENTIFIER_RULES.environmentName.pattern;
export const NAME_HINT = `a name of ${IDENTIFIER_RULES.environmentName.rule}`;

/** A raw Fuel task record (deployment_tasks format), as stored and as served by GET deployment_tasks. */
export type TaskRecord = Record<string, unknown>;

/** Task records per graph type (`default`, `provisioning`, ...). */
export type GraphRecords = Record<string, TaskRecord[]>;

/**
 * Sets dotted paths in a copy of `settings`: `{'storage.ceph.value': true}`. A `null` value
 * removes the key. Intermediate mappings are created; a non-mapping in the way is replaced.
 * A path with an empty segment or a segment that reaches a prototype (`__proto__`,
 * `constructor`, `prototype`) is refused, every one named, and nothing is changed.
 */
export function applySettingsPatch(
  settings: Record<string, unknown>,
  patch: Record<string, unknown>,
): Record<string, unknown> {
  const diagnostics: Diagnostic[] = [];
  for (const path of Object.keys(patch)) {
    if (path === '' || path.split('.').includes(''))
      diagnostics.push({
        severity: 'error',
        code: 'CONFIG_BAD_FIELD',
        path: `settings_patch.${path}`,
        message: "expected a dotted path like 'storage.ceph.value'",
      });
    else if (path.split('.').some(isForbiddenKey))
      diagnostics.push({
        severity: 'error',
        code: 'INPUT_FORBIDDEN_KEY',
        path: `settings_patch.${path}`,
        message: FORBIDDEN_KEY_MESSAGE,
      });
  }
  if (diagnostics.length > 0) throw new InvalidInputError(diagnostics);
  const out = structuredClone(settings);
  for (const [path, value] of Object.entries(patch)) setDottedPath(out, path, value);
  return out;
}
