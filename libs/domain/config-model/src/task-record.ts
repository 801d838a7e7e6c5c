import type { Diagnostic } from '@granule/core';
import { parseTaskData } from '@granule/task-model';
import type { CrossDependency, CrossRole, FaultTolerance, RoleSelector, TaskDefinition } from '@granule/task-model';
import type { GraphRecords, TaskRecord } from './config-model';

function selectorValue(selector: RoleSelector): string | string[] {
  if (selector.kind === 'all') return selector.withMaster ? ['*', 'master'] : '*';
  if (selector.kind === 'master') return 'master';
  return selector.patterns.map((p) => (p.kind === 'name' ? p.name : `/${p.source}/`));
}

function crossRoleValue(role: CrossRole): string | string[] | undefined {
  if (role.kind === 'any') return undefined;
  if (role.kind === 'self') return 'self';
  return selectorValue(role);
}

function crossValue(dep: CrossDependency): Record<string, unknown> {
  const out: Record<string, unknown> = { name: dep.isRegex ? `/${dep.name}/` : dep.name };
  const role = crossRoleValue(dep.role);
  if (role !== undefined) out.role = role;
  if (dep.policy !== 'all') out.policy = dep.policy;
  return out;
}

function faultToleranceValue(ft: FaultTolerance): number | string {
  const sign = ft.mustSucceed ? '-' : '';
  return ft.kind === 'count' ? Number(`${sign}${ft.value}`) : `${sign}${ft.value}%`;
}

/**
 * Writes a parsed task back as a deployment_tasks record (the format GET/PUT deployment_tasks
 * speak). Reading the record again gives the same task, except its `source`: generated legacy
 * ids become explicit ids.
 */
export function toTaskRecord(task: TaskDefinition): TaskRecord {
  const r: TaskRecord = { id: task.id, type: task.type };
  if (task.version !== '1.0.0') r.version = task.version;
  if (task.roles) r.roles = selectorValue(task.roles);
  if (task.stage) r.stage = task.stage.raw;
  if (task.tasks) r.tasks = [...task.tasks];
  if (task.requires.length > 0) r.requires = [...task.requires];
  if (task.requiredFor.length > 0) r.required_for = [...task.requiredFor];
  if (task.crossDepends.length > 0) r['cross-depends'] = task.crossDepends.map(crossValue);
  if (task.crossDependedBy.length > 0) r['cross-depended-by'] = task.crossDependedBy.map(crossValue);
  if (task.condition !== undefined) r.condition = task.condition;
  if (task.strategy) r.strategy = { ...task.strategy };
  if (task.faultTolerance) r.fault_tolerance = faultToleranceValue(task.faultTolerance);
  if (!task.failOnError) r.fail_on_error = false;
  if (Object.keys(task.parameters).length > 0) r.parameters = structuredClone(task.parameters);
  if (task.sensitive) r.sensitive = [...task.sensitive];
  return r;
}

/** Converts every graph of a loaded plugin or release to stored records. */
export function toGraphRecords(graphs: Record<string, TaskDefinition[]>): GraphRecords {
  const out: GraphRecords = {};
  for (const [type, tasks] of Object.entries(graphs)) out[type] = tasks.map(toTaskRecord);
  return out;
}

/**
 * Reads stored or uploaded records (deployment_tasks format) into tasks. `label` stands for
 * the file in diagnostics (e.g. `releases/3/deployment_tasks`); `plugin` tags plugin tasks.
 */
export function parseTaskRecordList(
  records: readonly unknown[],
  label: string,
  plugin?: string,
): { tasks: TaskDefinition[]; diagnostics: Diagnostic[] } {
  const result = parseTaskData(
    [...records],
    label,
    plugin === undefined ? { format: 'deployment-tasks' } : { format: 'deployment-tasks', plugin },
  );
  return { tasks: result.tasks, diagnostics: result.diagnostics };
}
