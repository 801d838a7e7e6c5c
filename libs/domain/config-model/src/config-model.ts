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
export const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
export const NAME_HINT = 'a name of letters, digits, _ . - (up to 63 characters, starting with a letter or digit)';

/** A raw Fuel task record (deployment_tasks format), as stored and as served by GET deployment_tasks. */
export type TaskRecord = Record<string, unknown>;

/** Task records per graph type (`default`, `provisioning`, ...). */
export type GraphRecords = Record<string, TaskRecord[]>;

/**
 * Sets dotted paths in a copy of `settings`: `{'storage.ceph.value': true}`. A `null` value
 * removes the key. Intermediate mappings are created; a non-mapping in the way is replaced.
 */
export function applySettingsPatch(
  settings: Record<string, unknown>,
  patch: Record<string, unknown>,
): Record<string, unknown> {
  const out = structuredClone(settings);
  for (const [path, value] of Object.entries(patch)) {
    const keys = path.split('.');
    let at: Record<string, unknown> = out;
    for (const key of keys.slice(0, -1)) {
      const next = at[key];
      if (typeof next !== 'object' || next === null || Array.isArray(next)) at[key] = {};
      at = at[key] as Record<string, unknown>;
    }
    const last = keys[keys.length - 1];
    if (value === null) delete at[last];
    else at[last] = value;
  }
  return out;
}
