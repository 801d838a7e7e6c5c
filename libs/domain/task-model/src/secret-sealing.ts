import { setDottedPath, type Diagnostic } from '@granule/core';
import {
  markedNames,
  maskAt,
  isClearSecret,
  sealAt,
  sensitiveDataPaths,
  sensitiveParameterPaths,
  sensitiveSettingPaths,
  type Seal,
  type ValuePath,
} from './sensitive-values';
import type { TaskDefinition } from './types';
import { formatPath } from './yaml-source';

/** The variable that gives whoever seals (config-store, the CLI) the installation's public key. */
export const SECRETS_PUBLIC_KEY_VARIABLE = 'GRANULE_SECRETS_PUBLIC_KEY';
/** The variable that gives the orchestrator the installation's private key (seed), which opens sealed values. */
export const SECRETS_KEY_VARIABLE = 'GRANULE_SECRETS_KEY';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A secret still in clear where it had to be sealed: where it is, and the task it belongs to. */
export interface ClearSecret {
  path: ValuePath;
  taskId?: string;
  /** The task's own file and line, when it knows them (parsed tasks). */
  file?: string;
  line?: number;
}

/** The secret paths of one task record (Fuel's format, or a stored record), from the record's root. */
export function taskRecordSecretPaths(record: unknown): ValuePath[] {
  if (!isObject(record) || !isObject(record.parameters)) return [];
  return sensitiveParameterPaths(record.parameters, markedNames(record.sensitive)).map((p) => ['parameters', ...p]);
}

/**
 * Seals every clear secret of a list of task records (Fuel's format). Without `seal` the records
 * are unchanged and `clear` lists what would have been sealed, each with its task id.
 */
export function sealTaskRecords<T>(records: readonly T[], seal?: Seal): { records: T[]; clear: ClearSecret[] } {
  const clear: ClearSecret[] = [];
  const out = records.map((record, i) => {
    const sealed = sealAt(record, taskRecordSecretPaths(record), seal);
    const id = isObject(record) && typeof record.id === 'string' ? record.id : undefined;
    for (const path of sealed.clear) clear.push({ path: [i, ...path], ...(id ? { taskId: id } : {}) });
    return sealed.value;
  });
  return { records: out, clear };
}

/** The same for parsed tasks: their parameters, by the name rule and each task's `sensitive` list. */
export function sealTaskDefinitions(
  tasks: readonly TaskDefinition[],
  seal?: Seal,
): { tasks: TaskDefinition[]; clear: ClearSecret[] } {
  const clear: ClearSecret[] = [];
  const out = tasks.map((task) => {
    const sealed = sealAt(task.parameters, sensitiveParameterPaths(task.parameters, task.sensitive), seal);
    const where = { file: task.source.file, ...(task.source.line > 0 ? { line: task.source.line } : {}) };
    for (const path of sealed.clear) clear.push({ path: ['parameters', ...path], taskId: task.id, ...where });
    return sealed.value === task.parameters ? task : { ...task, parameters: sealed.value };
  });
  return { tasks: out, clear };
}

/** Seals the clear secrets of an environment's settings (see `sensitiveSettingPaths`). */
export function sealSettings(
  settings: Record<string, unknown>,
  seal?: Seal,
): { settings: Record<string, unknown>; clear: ClearSecret[] } {
  const sealed = sealAt(settings, sensitiveSettingPaths(settings), seal);
  return { settings: sealed.value, clear: sealed.clear.map((path) => ({ path })) };
}

/**
 * Seals the clear secrets of a settings patch (`{'db.password': 'x', 'access.password.value': 'y'}`,
 * as `env set --setting` sends it), judged on the settings tree the patch describes: an entry
 * inside a secret is sealed whole, an entry holding one has it sealed inside. Paths in `clear` are
 * the dotted keys.
 */
export function sealSettingsPatch(
  patch: Record<string, unknown>,
  seal?: Seal,
): { patch: Record<string, unknown>; clear: ClearSecret[] } {
  const tree: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(patch)) setDottedPath(tree, key, value);
  const secret = sensitiveSettingPaths(tree);
  const clear: ClearSecret[] = [];
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(patch)) {
    const segments = key.split('.');
    const covers = (p: ValuePath): boolean => p.length <= segments.length && p.every((s, i) => s === segments[i]);
    if (secret.some(covers)) {
      // The entry is (inside) a secret: the whole value.
      if (isClearSecret(value) && seal) out[key] = seal(value);
      else {
        if (isClearSecret(value)) clear.push({ path: [key] });
        out[key] = value;
      }
      continue;
    }
    const below = secret
      .filter((p) => p.length > segments.length && segments.every((s, i) => s === p[i]))
      .map((p) => p.slice(segments.length));
    const sealed = sealAt(value, below, seal);
    for (const p of sealed.clear) clear.push({ path: [key, ...p] });
    out[key] = sealed.value;
  }
  return { patch: out, clear };
}

/** Seals the clear secrets of a data file's content or a release record (see `sensitiveDataPaths`). */
export function sealData<T>(data: T, seal?: Seal): { data: T; clear: ClearSecret[] } {
  const sealed = sealAt(data, sensitiveDataPaths(data), seal);
  return { data: sealed.value, clear: sealed.clear.map((path) => ({ path })) };
}

/** A task's parameters for display: `***` for every secret, sealed or not. */
export function maskTaskParameters(task: Pick<TaskDefinition, 'parameters' | 'sensitive'>): Record<string, unknown> {
  return maskAt(task.parameters, sensitiveParameterPaths(task.parameters, task.sensitive));
}

/** A task record (Fuel's format) for display. */
export function maskTaskRecord<T>(record: T): T {
  return maskAt(record, taskRecordSecretPaths(record));
}

/** Settings for display. */
export function maskSettings(settings: Record<string, unknown>): Record<string, unknown> {
  return maskAt(settings, sensitiveSettingPaths(settings));
}

/**
 * One `SECRET_NOT_SEALED` error per secret found in clear where it cannot stay so, naming where
 * it is (`file`, the key path under `prefix`, the task) and what to do (`hint`). Never the value.
 */
export function clearSecretDiagnostics(
  clear: readonly ClearSecret[],
  where: { file?: string; prefix?: ValuePath },
  hint: string,
): Diagnostic[] {
  return clear.map((c) => ({
    severity: 'error',
    code: 'SECRET_NOT_SEALED',
    ...(c.file || where.file ? { file: c.file ?? where.file } : {}),
    ...(c.line ? { line: c.line } : {}),
    path: formatPath([...(where.prefix ?? []), ...c.path]),
    ...(c.taskId ? { taskId: c.taskId } : {}),
    message: `a secret in clear: ${hint}`,
  }));
}
