import { InvalidInputError } from '@granule/core';
import type { Diagnostic } from '@granule/core';
import { MASTER_NODE_UID, matchesNode } from '@granule/task-model';
import type { RoleSelector, TaskDefinition } from '@granule/task-model';

/** The roles an environment's tasks name: role names and `/regex/` patterns, each sorted. */
export interface DefinedRoles {
  names: string[];
  patterns: string[];
}

type PatternSelector = Extract<RoleSelector, { kind: 'patterns' }>;

// `'*'` and `master` select nodes whatever their roles, so they define no role: counting them
// would accept every typo in a release that has a single `'*'` task.
const namingSelectors = (tasks: Iterable<TaskDefinition>): PatternSelector[] => {
  const out: PatternSelector[] = [];
  for (const t of tasks) if (t.roles?.kind === 'patterns') out.push(t.roles);
  return out;
};

/** What the tasks define as roles (`master` is the master host, not a role). */
export function definedRoles(tasks: Iterable<TaskDefinition>): DefinedRoles {
  const names = new Set<string>();
  const patterns = new Set<string>();
  for (const selector of namingSelectors(tasks)) {
    for (const p of selector.patterns) {
      if (p.kind === 'regex') patterns.add(`/${p.source}/`);
      else if (p.name !== MASTER_NODE_UID) names.add(p.name);
    }
  }
  return { names: [...names].sort(), patterns: [...patterns].sort() };
}

/**
 * The roles of `roles` no task selects as the planner would: a role is defined when a node with
 * only that role is selected by some task's role list (a name, or a `/regex/` anchored at the
 * start like Fuel's); `'*'` and `master` tasks define none.
 */
export function undefinedRoles(roles: readonly string[], tasks: Iterable<TaskDefinition>): string[] {
  const selectors = namingSelectors(tasks);
  return [...new Set(roles)].filter(
    (role) =>
      role === MASTER_NODE_UID || !selectors.some((s) => matchesNode(s, { uid: `candidate-${role}`, roles: [role] })),
  );
}

/**
 * Refuses roles the environment's tasks (release, enabled plugins, overrides; every graph) do
 * not define: `InvalidInputError` with one `CONFIG_UNKNOWN_ROLE` diagnostic per role, naming
 * the environment and the roles it defines.
 */
export function assertRolesDefined(
  roles: readonly string[],
  tasks: readonly TaskDefinition[],
  environment: string,
): void {
  const unknown = undefinedRoles(roles, tasks);
  if (unknown.length === 0) return;
  const defined = definedRoles(tasks);
  const all = [...defined.names, ...defined.patterns];
  const known =
    all.length > 0
      ? `it defines ${all.join(', ')}`
      : "it defines none (its tasks run on every node ('*') or on the master host)";
  const diagnostics: Diagnostic[] = unknown.map((role) => ({
    severity: 'error',
    code: 'CONFIG_UNKNOWN_ROLE',
    path: 'roles',
    message:
      role === MASTER_NODE_UID
        ? `'master' is the Granule master host, not a role a node can have (environment '${environment}': ${known})`
        : `role '${role}' is not defined by the release or the plugins of environment '${environment}'; ${known}`,
  }));
  throw new InvalidInputError(diagnostics);
}
