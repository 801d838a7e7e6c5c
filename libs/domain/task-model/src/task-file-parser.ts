import { Diagnostic, InvalidInputError } from '@granule/core';
import { RecordContext, RecordOutcome, parseTaskRecord } from './task-record-parser';
import { describeValue, isPlainObject } from './task-diagnostics';
import { TaskDefinition } from './types';
import { LineLocator, PathSegment, formatPath, loadYaml } from './yaml-source';

/** What a parser returns: the valid tasks and every problem found (tasks with errors are left out). */
export interface ParseResult {
  tasks: TaskDefinition[];
  diagnostics: Diagnostic[];
}

/**
 * The three Fuel task formats: `deployment-tasks` (deployment_tasks.yaml, records with `id`),
 * `legacy-tasks` (tasks.yaml: role + stage + type, no id), `node-roles` (node_roles.yaml:
 * each role's `tasks:` list becomes a `type: group` task, seed 001).
 */
export type TaskFileFormat = 'deployment-tasks' | 'legacy-tasks' | 'node-roles';

export interface TaskParseOptions {
  /** Plugin the file belongs to: recorded in `source.plugin`, and the legacy id scope. */
  plugin?: string;
  /** Legacy id scope when there is no plugin; default: the file's parent directory name. */
  scope?: string;
}

export interface TaskDataOptions extends TaskParseOptions {
  /** Skip auto-detection. */
  format?: TaskFileFormat;
  /** Lines for already-loaded data; without it, diagnostics have no line and `source.line` is 0. */
  locate?: LineLocator;
}

/**
 * Parses one task file of any of the three formats, detected from the data: a list is
 * legacy tasks.yaml when the file is named `tasks.yaml`/`tasks.yml` or no entry has an `id` but
 * some have `stage` or `role`, else deployment_tasks; a mapping of mappings is node roles.
 * An empty file gives no tasks and no error.
 */
export function parseTaskFile(text: string, file: string, options: TaskParseOptions = {}): ParseResult {
  return parseText(text, file, options);
}

/** Parses deployment_tasks.yaml text (tasks with `id`; versions 1.0.0 and 2.0.0+). */
export function parseDeploymentTasks(text: string, file: string, options: TaskParseOptions = {}): ParseResult {
  return parseText(text, file, { ...options, format: 'deployment-tasks' });
}

/** Parses legacy tasks.yaml text; ids are generated as `<scope>.<stage>.<n>` (`generatedId: true`). */
export function parseLegacyTasks(text: string, file: string, options: TaskParseOptions = {}): ParseResult {
  return parseText(text, file, { ...options, format: 'legacy-tasks' });
}

/** Parses node_roles.yaml text: one `type: group` task per role with a `tasks:` list. */
export function parseNodeRoles(text: string, file: string, options: TaskParseOptions = {}): ParseResult {
  return parseText(text, file, { ...options, format: 'node-roles' });
}

function parseText(text: string, file: string, options: TaskDataOptions): ParseResult {
  const loaded = loadYaml(text, file);
  if (loaded.diagnostics.some((d) => d.severity === 'error')) return { tasks: [], diagnostics: loaded.diagnostics };
  const result = parseTaskData(loaded.data, file, { ...options, locate: loaded.locate });
  return { tasks: result.tasks, diagnostics: [...loaded.diagnostics, ...result.diagnostics] };
}

/** Parses a list of task records that is already loaded (e.g. merged plugin data). */
export function parseTaskRecords(records: unknown[], file: string, options: TaskDataOptions = {}): ParseResult {
  return parseTaskData(records, file, options);
}

/**
 * Parses already-loaded data of any format (`parseTaskFile` without the YAML step).
 * `null`/`undefined` gives no tasks; duplicate ids inside the data are errors.
 */
export function parseTaskData(data: unknown, file: string, options: TaskDataOptions = {}): ParseResult {
  const diagnostics: Diagnostic[] = [];
  const ctx: RecordContext = { file, locate: options.locate, plugin: options.plugin, diagnostics };
  if (data === null || data === undefined) return { tasks: [], diagnostics };
  const format = options.format ?? detectFormat(data, file);
  let outcomes: RecordOutcome[];
  if (format === 'node-roles') {
    if (!isPlainObject(data))
      return shapeError(ctx, `a node roles file must be a mapping of role name to role, got ${describeValue(data)}`);
    outcomes = parseRoleMap(data, ctx);
  } else if (Array.isArray(data)) {
    const legacy = format === 'legacy-tasks';
    const scope = options.plugin ?? options.scope ?? parentDirName(file) ?? 'legacy';
    outcomes = data.map((raw, i) => parseTaskRecord(raw, i, [i], ctx, { legacy, scope }));
  } else if (format === undefined && isPlainObject(data) && ('id' in data || 'type' in data)) {
    return shapeError(
      ctx,
      `expected a list of tasks: start each task with '- ' (e.g. '- id: ${String(data.id ?? 'my-task')}')`,
    );
  } else {
    return shapeError(ctx, `expected a list of tasks or a mapping of node roles, got ${describeValue(data)}`);
  }
  return { tasks: keepFirstOfEachId(outcomes, file, diagnostics), diagnostics };
}

function shapeError(ctx: RecordContext, message: string): ParseResult {
  const d: Diagnostic = { severity: 'error', code: 'TASK_FILE_SHAPE', message, file: ctx.file };
  const line = ctx.locate?.([]);
  if (line !== undefined) d.line = line;
  ctx.diagnostics.push(d);
  return { tasks: [], diagnostics: ctx.diagnostics };
}

function detectFormat(data: unknown, file: string): TaskFileFormat | undefined {
  if (Array.isArray(data)) {
    // fuel-library keeps granular tasks (with ids) in files named tasks.yaml too, so a
    // tasks.yaml is legacy only when its records carry no id.
    const records = data.filter(isPlainObject);
    const withoutIds = records.length > 0 && records.every((r) => !('id' in r));
    if (/(^|[\\/])tasks\.ya?ml$/.test(file))
      return withoutIds || records.length === 0 ? 'legacy-tasks' : 'deployment-tasks';
    const legacyLooking = withoutIds && records.some((r) => 'stage' in r || 'role' in r);
    return legacyLooking ? 'legacy-tasks' : 'deployment-tasks';
  }
  if (isPlainObject(data) && Object.values(data).every((v) => v === null || isPlainObject(v))) return 'node-roles';
  return undefined;
}

function parentDirName(file: string): string | undefined {
  const parts = file.split(/[\\/]/).filter((p) => p !== '' && p !== '.');
  return parts.length >= 2 ? parts[parts.length - 2] : undefined;
}

// Keys of a node role that shape its group task; everything else describes the role, not the group.
const ROLE_GROUP_KEYS = ['tasks', 'parameters', 'strategy', 'fault_tolerance'] as const;

function parseRoleMap(roles: Record<string, unknown>, ctx: RecordContext): RecordOutcome[] {
  const outcomes: RecordOutcome[] = [];
  Object.entries(roles).forEach(([name, role], index) => {
    if (role !== null && !isPlainObject(role)) {
      pushError(ctx, 'TASK_BAD_RECORD', [name], `expected a node role mapping, got ${describeValue(role)}`, name);
      return;
    }
    // seed 001: empty or absent `tasks:` means the role brings no group.
    if (
      !role ||
      role.tasks === undefined ||
      role.tasks === null ||
      (Array.isArray(role.tasks) && role.tasks.length === 0)
    )
      return;
    const record: Record<string, unknown> = { id: name, type: 'group', version: '2.0.0', roles: [name] };
    for (const key of ROLE_GROUP_KEYS) if (role[key] !== undefined) record[key] = role[key];
    // Paths are `<role>.tasks[1]`; keys the record made up (id, type) locate to the role's line.
    outcomes.push(parseTaskRecord(record, index, [name], ctx, { legacy: false, scope: '' }));
  });
  return outcomes;
}

function pushError(
  ctx: RecordContext,
  code: Diagnostic['code'],
  path: PathSegment[],
  message: string,
  taskId?: string,
): void {
  const d: Diagnostic = { severity: 'error', code, message, file: ctx.file, path: formatPath(path) };
  const line = ctx.locate?.(path);
  if (line !== undefined) d.line = line;
  if (taskId !== undefined) d.taskId = taskId;
  ctx.diagnostics.push(d);
}

interface Definition {
  id?: string;
  file: string;
  line?: number;
  task?: TaskDefinition;
}

const where = (d: Definition): string => (d.line ? `${d.file}:${d.line}` : d.file);

/**
 * Keeps the first definition of each id (valid or not: a broken first definition still makes a
 * second one a duplicate); every later one is a TASK_DUPLICATE_ID error naming both places.
 */
function keepFirstOfEach(definitions: Definition[], diagnostics: Diagnostic[]): TaskDefinition[] {
  const seen = new Map<string, Definition>();
  const kept: TaskDefinition[] = [];
  for (const def of definitions) {
    const first = def.id === undefined ? undefined : seen.get(def.id);
    if (def.id === undefined || !first) {
      if (def.id !== undefined) seen.set(def.id, def);
      if (def.task) kept.push(def.task);
      continue;
    }
    const d: Diagnostic = {
      severity: 'error',
      code: 'TASK_DUPLICATE_ID',
      message: `task id '${def.id}' is defined twice: ${where(first)} and ${where(def)}`,
      file: def.file,
      taskId: def.id,
    };
    if (def.line) d.line = def.line;
    diagnostics.push(d);
  }
  return kept;
}

function keepFirstOfEachId(outcomes: RecordOutcome[], file: string, diagnostics: Diagnostic[]): TaskDefinition[] {
  return keepFirstOfEach(
    outcomes.map((o) => ({ ...o, file })),
    diagnostics,
  );
}

/**
 * Concatenates the results of several files, in order, and reports ids defined in more than one
 * of them (`TASK_DUPLICATE_ID`, naming both file:line; the first definition is kept).
 */
export function mergeParseResults(results: ParseResult[]): ParseResult {
  const diagnostics = results.flatMap((r) => r.diagnostics);
  const tasks = keepFirstOfEach(
    results.flatMap((r) =>
      r.tasks.map((task) => ({ id: task.id, file: task.source.file, line: task.source.line, task })),
    ),
    diagnostics,
  );
  return { tasks, diagnostics };
}

/** Returns the tasks, or throws `InvalidInputError` carrying every diagnostic when any is an error. */
export function assertNoErrors(result: ParseResult): TaskDefinition[] {
  if (result.diagnostics.some((d) => d.severity === 'error')) throw new InvalidInputError(result.diagnostics);
  return result.tasks;
}
