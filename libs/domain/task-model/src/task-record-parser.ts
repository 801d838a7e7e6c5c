import { Diagnostic, Severity, identifierProblem } from '@granule/core';
import { readFaultTolerance } from './fault-tolerance';
import { isRegexLiteral, readRoleSelector, regexError } from './role-selector';
import { UNSEALABLE_PARAMETERS, isSealedValue } from './sensitive-values';
import { readStageRef } from './stage-ref';
import { FieldProblem, TaskDiagnosticCode, describeValue, editDistance, isPlainObject } from './task-diagnostics';
import { CrossDependency, CrossRole, RoleSelector, Strategy, TASK_TYPES, TaskDefinition, TaskType } from './types';
import { LineLocator, PathSegment, formatPath } from './yaml-source';

/** Where records are read from; shared by every record of one file. */
export interface RecordContext {
  file: string;
  locate?: LineLocator;
  plugin?: string;
  diagnostics: Diagnostic[];
}

const SELECTOR_KEYS = ['role', 'roles', 'groups', 'tags'] as const;
const KNOWN_KEYS = new Set([
  'id',
  'type',
  'version',
  ...SELECTOR_KEYS,
  'requires',
  'required_for',
  'cross-depends',
  'cross-depended-by',
  'condition',
  'parameters',
  'strategy',
  'stage',
  'fault_tolerance',
  'fail_on_error',
  'tasks',
  'sensitive',
]);
// Fuel keys Granule accepts and does not use; no warning for them.
const IGNORED_FUEL_KEYS = new Set([
  'description',
  'reexecute_on',
  'refresh_on',
  'os-version',
  'fuel-version',
  'no_puppet_run',
]);

const TYPE_ALIASES: Record<string, TaskType> = { rsync: 'sync' };

const REQUIRED_PARAMETERS: Partial<Record<TaskType, string[]>> = {
  shell: ['cmd'],
  puppet: ['puppet_manifest'],
  sync: ['src', 'dst'],
  upload_file: ['path', 'data'],
  copy_files: ['files'],
};
const NUMBER_PARAMETERS = ['timeout', 'retries', 'interval'];
const STRING_PARAMETERS = ['cmd', 'cwd', 'puppet_manifest', 'puppet_modules', 'src', 'dst', 'path', 'data'];
const PERMISSION_PARAMETERS = ['permissions', 'dir_permissions'];

/** Collects the diagnostics of one record and counts its errors. */
class RecordReporter {
  errors = 0;
  taskId?: string;

  constructor(
    private readonly ctx: RecordContext,
    readonly base: readonly PathSegment[],
  ) {}

  error(code: TaskDiagnosticCode, rel: readonly PathSegment[], message: string): void {
    this.errors++;
    this.add('error', code, rel, message);
  }

  warn(code: TaskDiagnosticCode, rel: readonly PathSegment[], message: string): void {
    this.add('warning', code, rel, message);
  }

  problem(p: FieldProblem, rel: readonly PathSegment[]): void {
    this.error(p.code, rel, p.message);
  }

  line(rel: readonly PathSegment[] = []): number | undefined {
    return this.ctx.locate?.([...this.base, ...rel]);
  }

  private add(severity: Severity, code: TaskDiagnosticCode, rel: readonly PathSegment[], message: string): void {
    const path = [...this.base, ...rel];
    const d: Diagnostic = { severity, code, message, file: this.ctx.file, path: formatPath(path) };
    const line = this.ctx.locate?.(path);
    if (line !== undefined) d.line = line;
    if (this.taskId !== undefined) d.taskId = this.taskId;
    this.ctx.diagnostics.push(d);
  }
}

/** Options of one record that depend on the file format. */
export interface RecordOptions {
  /** Legacy tasks.yaml: no `id` needed, a `stage` is. */
  legacy: boolean;
  /** Legacy id prefix, `<scope>.<stage>.<n>`. */
  scope: string;
}

/** One record read: the task when it is valid, and its id and line either way (for duplicate checks). */
export interface RecordOutcome {
  task?: TaskDefinition;
  id?: string;
  line?: number;
}

/**
 * Normalises one raw task record into a TaskDefinition. Every problem goes to `ctx.diagnostics`;
 * a record with an error gives no `task`.
 */
export function parseTaskRecord(
  raw: unknown,
  index: number,
  base: readonly PathSegment[],
  ctx: RecordContext,
  opts: RecordOptions,
): RecordOutcome {
  const r = new RecordReporter(ctx, base);
  if (!isPlainObject(raw)) {
    r.error('TASK_BAD_RECORD', [], `expected a task (a mapping with id, type, ...), got ${describeValue(raw)}`);
    return { line: r.line() };
  }

  let id: string | undefined;
  if (raw.id !== undefined && raw.id !== null) {
    const problem = identifierProblem('taskId', raw.id);
    if (problem === undefined) id = raw.id as string;
    else r.error('TASK_BAD_FIELD', ['id'], problem);
  } else if (!opts.legacy) {
    r.error('TASK_MISSING_FIELD', [], `task has no 'id'`);
  }
  r.taskId = id;

  const type = readType(raw, r);
  const version = readVersion(raw, r);
  const roles = readRoles(raw, r, type);
  const requires = readIdList(raw, 'requires', r);
  const requiredFor = readIdList(raw, 'required_for', r);
  const crossDepends = readCrossDeps(raw, 'cross-depends', r);
  const crossDependedBy = readCrossDeps(raw, 'cross-depended-by', r);
  const condition = readCondition(raw, r);
  const { parameters, strategy } = readParameters(raw, r, type);
  const sensitive = readSensitive(raw, r, parameters);

  let stage;
  if (raw.stage !== undefined && raw.stage !== null) {
    const s = readStageRef(raw.stage);
    if ('code' in s) r.problem(s, ['stage']);
    else stage = s;
  } else if (opts.legacy) {
    // Without an id the record was read as a legacy task; the id is as likely what is missing.
    r.error(
      'TASK_MISSING_FIELD',
      [],
      `task has no 'id' and no 'stage': give it an id (a granular task), or a stage such as 'post_deployment/100' (a legacy tasks.yaml task)`,
    );
  }

  let faultTolerance;
  if (raw.fault_tolerance !== undefined && raw.fault_tolerance !== null) {
    const ft = readFaultTolerance(raw.fault_tolerance);
    if ('code' in ft) r.error(ft.code, ['fault_tolerance'], ft.message);
    else if (type !== undefined && type !== 'group')
      r.warn(
        'TASK_IGNORED_FIELD',
        ['fault_tolerance'],
        `fault_tolerance is only used by group tasks; ignored for a ${type} task`,
      );
    else faultTolerance = ft;
  }

  let failOnError = true;
  if (raw.fail_on_error !== undefined && raw.fail_on_error !== null) {
    if (typeof raw.fail_on_error === 'boolean') failOnError = raw.fail_on_error;
    else
      r.error('TASK_BAD_FIELD', ['fail_on_error'], `expected true or false, got ${describeValue(raw.fail_on_error)}`);
  }

  let tasks: string[] | undefined;
  if (raw.tasks !== undefined && raw.tasks !== null) {
    const members = readIdList(raw, 'tasks', r);
    if (type !== undefined && type !== 'group')
      r.warn('TASK_IGNORED_FIELD', ['tasks'], `tasks is only used by group tasks; ignored for a ${type} task`);
    else tasks = members;
  }

  for (const key of Object.keys(raw)) {
    if (KNOWN_KEYS.has(key) || IGNORED_FUEL_KEYS.has(key)) continue;
    const near = [...KNOWN_KEYS].find((k) => editDistance(k, key) <= 2);
    r.warn('TASK_UNKNOWN_FIELD', [key], `unknown field '${key}' is ignored${near ? ` (did you mean '${near}'?)` : ''}`);
  }

  if (r.errors > 0 || type === undefined) return { id, line: r.line() };
  let generatedId = false;
  if (id === undefined) {
    // Legacy records only (others have an error by now); a stage is there, or errors stopped us.
    id = `${opts.scope}.${stage?.name}.${index + 1}`;
    generatedId = true;
  }

  const task: TaskDefinition = {
    id,
    type,
    version,
    roles,
    requires,
    requiredFor,
    crossDepends,
    crossDependedBy,
    parameters,
    failOnError,
    source: { file: ctx.file, line: r.line() ?? 0, index },
  };
  if (condition !== undefined) task.condition = condition;
  if (strategy) task.strategy = strategy;
  if (stage) task.stage = stage;
  if (faultTolerance) task.faultTolerance = faultTolerance;
  if (tasks) task.tasks = tasks;
  if (sensitive && sensitive.length > 0) task.sensitive = sensitive;
  if (generatedId) task.generatedId = true;
  if (ctx.plugin !== undefined) task.source.plugin = ctx.plugin;
  return { task, id, line: r.line() };
}

function readType(raw: Record<string, unknown>, r: RecordReporter): TaskType | undefined {
  const value = raw.type;
  if (value === undefined || value === null) {
    r.error('TASK_MISSING_FIELD', [], `task has no 'type' (one of ${TASK_TYPES.join(', ')})`);
    return undefined;
  }
  if (typeof value === 'string') {
    const type = TYPE_ALIASES[value] ?? value;
    if ((TASK_TYPES as readonly string[]).includes(type)) return type as TaskType;
  }
  r.error(
    'TASK_UNKNOWN_TYPE',
    ['type'],
    `unknown task type ${describeValue(value)}: expected one of ${TASK_TYPES.join(', ')} (rsync = sync)`,
  );
  return undefined;
}

function readVersion(raw: Record<string, unknown>, r: RecordReporter): string {
  const value = raw.version;
  if (value === undefined || value === null) return '1.0.0';
  if (typeof value === 'string' && /^\d+\.\d+\.\d+$/.test(value)) return value;
  r.error('TASK_BAD_FIELD', ['version'], `expected a version like '2.0.0', got ${describeValue(value)}`);
  return '1.0.0';
}

function readRoles(raw: Record<string, unknown>, r: RecordReporter, type: TaskType | undefined): RoleSelector | null {
  const present = SELECTOR_KEYS.filter((k) => raw[k] !== undefined && raw[k] !== null);
  const selector = readRoleSelector(
    present.map((k) => raw[k]),
    (p, valueIndex, item) => {
      const key = present[valueIndex];
      r.problem(p, item === undefined ? [key] : [key, item]);
    },
  );
  if (type === 'stage') {
    if (present.length > 0)
      r.warn('TASK_IGNORED_FIELD', [present[0]], `stage tasks run on no node; ${present.join(', ')} ignored`);
    return null;
  }
  return selector;
}

function readIdList(raw: Record<string, unknown>, key: string, r: RecordReporter): string[] {
  const value = raw[key];
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [value];
  if (!Array.isArray(value)) {
    r.error('TASK_BAD_FIELD', [key], `expected a list of task ids, got ${describeValue(value)}`);
    return [];
  }
  const ids: string[] = [];
  value.forEach((item, i) => {
    if (typeof item === 'string' && item !== '') ids.push(item);
    else r.error('TASK_BAD_FIELD', [key, i], `expected a task id, got ${describeValue(item)}`);
  });
  return ids;
}

function readCrossDeps(raw: Record<string, unknown>, key: string, r: RecordReporter): CrossDependency[] {
  const value = raw[key];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    r.error('TASK_BAD_FIELD', [key], `expected a list of {name, role?, policy?}, got ${describeValue(value)}`);
    return [];
  }
  const deps: CrossDependency[] = [];
  value.forEach((item, i) => {
    if (!isPlainObject(item)) {
      r.error('TASK_BAD_FIELD', [key, i], `expected {name, role?, policy?}, got ${describeValue(item)}`);
      return;
    }
    const before = r.errors;
    const name = item.name;
    let dep: Pick<CrossDependency, 'name' | 'isRegex'> | undefined;
    if (typeof name !== 'string' || name === '') {
      r.error(
        name === undefined ? 'TASK_MISSING_FIELD' : 'TASK_BAD_FIELD',
        [key, i, 'name'],
        `expected a task id or /regex/, got ${describeValue(name)}`,
      );
    } else if (isRegexLiteral(name)) {
      const error = regexError(name.slice(1, -1));
      if (error)
        r.error(
          'TASK_BAD_NAME_PATTERN',
          [key, i, 'name'],
          `task name pattern '${name}' is not a valid regex: ${error}`,
        );
      else dep = { name: name.slice(1, -1), isRegex: true };
    } else {
      dep = { name, isRegex: false };
    }
    const role = readCrossRole(item.role, r, [key, i, 'role']);
    let policy: CrossDependency['policy'] = 'all';
    if (item.policy !== undefined && item.policy !== null) {
      if (item.policy === 'all' || item.policy === 'any') policy = item.policy;
      else r.error('TASK_BAD_FIELD', [key, i, 'policy'], `expected all or any, got ${describeValue(item.policy)}`);
    }
    if (dep && role && r.errors === before) deps.push({ ...dep, role, policy });
  });
  return deps;
}

function readCrossRole(value: unknown, r: RecordReporter, path: PathSegment[]): CrossRole | undefined {
  if (value === undefined || value === null) return { kind: 'any' };
  if (value === 'self') return { kind: 'self' };
  let ok = true;
  const selector = readRoleSelector([value], (p, _v, item) => {
    ok = false;
    r.problem(p, item === undefined ? path : [...path, item]);
  });
  if (!ok) return undefined;
  // `role: []` selects no node, so the dependency waits on nothing (as in Fuel); omitting role means any node.
  return selector ?? { kind: 'patterns', patterns: [] };
}

function readCondition(raw: Record<string, unknown>, r: RecordReporter): string | undefined {
  const value = raw.condition;
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (isPlainObject(value) && 'yaql_exp' in value) {
    r.error(
      'TASK_UNSUPPORTED',
      ['condition'],
      `yaql_exp conditions are not supported; write the condition as an expression string, e.g. condition: "settings:storage.ceph.value == true"`,
    );
  } else {
    r.error('TASK_BAD_FIELD', ['condition'], `expected an expression string, got ${describeValue(value)}`);
  }
  return undefined;
}

function readParameters(
  raw: Record<string, unknown>,
  r: RecordReporter,
  type: TaskType | undefined,
): { parameters: Record<string, unknown>; strategy?: Strategy } {
  let parameters: Record<string, unknown> = {};
  const value = raw.parameters;
  if (value !== undefined && value !== null) {
    if (isPlainObject(value)) parameters = { ...value };
    else r.error('TASK_BAD_FIELD', ['parameters'], `expected a mapping, got ${describeValue(value)}`);
  }

  let strategy: Strategy | undefined;
  if (parameters.strategy !== undefined && parameters.strategy !== null) {
    strategy = readStrategy(parameters.strategy, r, ['parameters', 'strategy']);
    if (raw.strategy !== undefined && raw.strategy !== null) {
      r.warn('TASK_IGNORED_FIELD', ['strategy'], `strategy is set twice; parameters.strategy is used`);
    }
  } else if (raw.strategy !== undefined && raw.strategy !== null) {
    strategy = readStrategy(raw.strategy, r, ['strategy']);
  }
  delete parameters.strategy;

  if (type === 'puppet' && parameters.puppet_manifests !== undefined) {
    if (parameters.puppet_manifest === undefined) {
      r.warn(
        'TASK_DEPRECATED_ALIAS',
        ['parameters', 'puppet_manifests'],
        `parameters.puppet_manifests is read as puppet_manifest; rename it`,
      );
      parameters.puppet_manifest = parameters.puppet_manifests;
    } else {
      r.warn(
        'TASK_IGNORED_FIELD',
        ['parameters', 'puppet_manifests'],
        `parameters.puppet_manifests is ignored: puppet_manifest is set`,
      );
    }
    delete parameters.puppet_manifests;
  }

  for (const name of type ? (REQUIRED_PARAMETERS[type] ?? []) : []) {
    if (parameters[name] === undefined || parameters[name] === null) {
      r.error('TASK_MISSING_PARAMETER', ['parameters', name], `a ${type} task needs parameters.${name}`);
    }
  }
  checkParameterTypes(parameters, r, ['parameters']);
  if (parameters.files !== undefined && parameters.files !== null) checkFiles(parameters.files, r);
  return { parameters, strategy };
}

function checkParameterTypes(params: Record<string, unknown>, r: RecordReporter, at: PathSegment[]): void {
  const check = (name: string, ok: (v: unknown) => boolean, expected: string): void => {
    const v = params[name];
    if (v === undefined || v === null || ok(v)) return;
    // A sealed text is opened into the string at dispatch.
    if (expected === 'a string' && isSealedValue(v)) return;
    const path = [...at, name];
    if (isPlainObject(v) && 'yaql_exp' in v) {
      r.error('TASK_UNSUPPORTED', path, `yaql_exp values are not supported; write ${name} as ${expected}`);
    } else {
      r.error('TASK_BAD_FIELD', path, `expected ${expected}, got ${describeValue(v)}`);
    }
  };
  for (const name of NUMBER_PARAMETERS)
    check(name, (v) => typeof v === 'number' && Number.isFinite(v) && v >= 0, 'a number');
  for (const name of STRING_PARAMETERS) check(name, (v) => typeof v === 'string', 'a string');
  for (const name of PERMISSION_PARAMETERS) {
    check(
      name,
      (v) =>
        (typeof v === 'string' && /^[0-7]{3,4}$/.test(v)) || (typeof v === 'number' && Number.isInteger(v) && v >= 0),
      "a mode like '0644'",
    );
  }
}

function checkFiles(files: unknown, r: RecordReporter): void {
  const at: PathSegment[] = ['parameters', 'files'];
  if (!Array.isArray(files) || files.length === 0) {
    r.error(
      'TASK_BAD_FIELD',
      at,
      `expected a non-empty list of {src, dst, permissions?}, got ${Array.isArray(files) ? 'an empty list' : describeValue(files)}`,
    );
    return;
  }
  files.forEach((entry, i) => {
    if (!isPlainObject(entry)) {
      r.error('TASK_BAD_FIELD', [...at, i], `expected {src, dst, permissions?}, got ${describeValue(entry)}`);
      return;
    }
    for (const name of ['src', 'dst']) {
      if (entry[name] === undefined || entry[name] === null)
        r.error('TASK_MISSING_PARAMETER', [...at, i, name], `each file needs ${name}`);
    }
    checkParameterTypes(entry, r, [...at, i]);
  });
}

/** Every key of a parameters tree, at any depth (what a `sensitive` name may refer to). */
function parameterKeys(node: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(node)) node.forEach((item) => parameterKeys(item, out));
  else if (isPlainObject(node) && !isSealedValue(node))
    for (const [key, value] of Object.entries(node)) {
      out.add(key);
      parameterKeys(value, out);
    }
  return out;
}

/**
 * Granule's `sensitive:` list: parameter or `env` names whose values are secrets beside the
 * default names (a name or a list of names; each must be a key of the task's parameters).
 */
function readSensitive(
  raw: Record<string, unknown>,
  r: RecordReporter,
  parameters: Record<string, unknown>,
): string[] | undefined {
  const value = raw.sensitive;
  if (value === undefined || value === null) return undefined;
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list)) {
    r.error('TASK_BAD_FIELD', ['sensitive'], `expected a list of parameter or env names, got ${describeValue(value)}`);
    return undefined;
  }
  const keys = parameterKeys(parameters);
  const names: string[] = [];
  list.forEach((name, i) => {
    const at = typeof value === 'string' ? ['sensitive'] : ['sensitive', i];
    if (typeof name !== 'string' || name === '') {
      r.error('TASK_BAD_FIELD', at, `expected a parameter or env name, got ${describeValue(name)}`);
    } else if (UNSEALABLE_PARAMETERS.includes(name)) {
      r.error(
        'TASK_BAD_FIELD',
        at,
        `parameters.${name} cannot be secret: the orchestrator reads it to time the task (a secret is opened only for the agent)`,
      );
    } else if (!keys.has(name)) {
      r.error(
        'TASK_BAD_FIELD',
        at,
        `'${name}' names no parameter or env variable of this task (it has: ${[...keys].sort().join(', ') || 'none'})`,
      );
    } else names.push(name);
  });
  return names;
}

function readStrategy(value: unknown, r: RecordReporter, at: PathSegment[]): Strategy | undefined {
  if (!isPlainObject(value)) {
    r.error(
      'TASK_BAD_FIELD',
      at,
      `expected {type: parallel, amount?} or {type: one_by_one}, got ${describeValue(value)}`,
    );
    return undefined;
  }
  const { type, amount } = value;
  if (type === 'one_by_one') {
    if (amount !== undefined && amount !== null)
      r.warn('TASK_IGNORED_FIELD', [...at, 'amount'], `amount is ignored for one_by_one`);
    return { type: 'one_by_one' };
  }
  if (type !== 'parallel') {
    r.error('TASK_BAD_FIELD', [...at, 'type'], `expected parallel or one_by_one, got ${describeValue(type)}`);
    return undefined;
  }
  if (amount === undefined || amount === null) return { type: 'parallel' };
  if (typeof amount === 'number' && Number.isInteger(amount) && amount > 0) return { type: 'parallel', amount };
  if (isPlainObject(amount) && 'yaql_exp' in amount) {
    r.error('TASK_UNSUPPORTED', [...at, 'amount'], `yaql_exp values are not supported; write a positive integer`);
  } else {
    r.error('TASK_BAD_FIELD', [...at, 'amount'], `expected a positive integer, got ${describeValue(amount)}`);
  }
  return undefined;
}
