import { posix } from 'node:path';
import type { TaskDefinition, TaskType } from '@granule/task-model';

const isAbsolute = (p: string): boolean => p.startsWith('/');
const isRemote = (p: string): boolean => /^[a-z]+:\/\//i.test(p) || /^[^/]*::/.test(p) || /^[^/]+:[^/]/.test(p);
const isPackageRelative = (p: unknown): boolean => typeof p === 'string' && p !== '' && !isAbsolute(p) && !isRemote(p);

/**
 * The parameter that names the package a task's relative paths belong to. The planner and the
 * orchestrator carry it as any other parameter; the agent fetches the package by its digest,
 * anchors the task's paths in its copy and removes the key before the task runs (ADR 0026).
 */
export const PACKAGE_PARAMETER = '$package';

/** Which installed plugin or release a task's files come from, and the SHA-256 (hex) of their archive. */
export interface PackageRef {
  name: string;
  version: string;
  digest: string;
}

/** A digest as packages are named: 64 lowercase hex digits. */
export const PACKAGE_DIGEST_RE = /^[0-9a-f]{64}$/;

/**
 * Anchors a plugin's relative script paths at its deployment scripts folder, as Fuel did with
 * /etc/fuel/plugins/<name>/: shell tasks run there unless they set `cwd`; puppet manifests and
 * module paths, sync sources and copy_files sources that are relative are taken from there.
 * Destinations are left alone (agents resolve them under their root). The agent calls it with
 * its cached copy of the package; `granule plan` of a folder shows it with the folder.
 */
export function anchorScriptPaths(tasks: TaskDefinition[], scriptsDir: string): TaskDefinition[] {
  return tasks.map((task) => {
    const params = anchorParameters(task.type, task.parameters, scriptsDir);
    return params === task.parameters ? task : { ...task, parameters: params };
  });
}

/** {@link anchorScriptPaths} of one task's parameters; the same object when the type has no script paths. */
export function anchorParameters(
  type: TaskType,
  parameters: Record<string, unknown>,
  scriptsDir: string,
): Record<string, unknown> {
  const at = (p: unknown): unknown =>
    typeof p === 'string' && isPackageRelative(p)
      ? posix.join(scriptsDir, p).replace(/\/?$/, p.endsWith('/') ? '/' : '')
      : p;
  const params = { ...parameters };
  switch (type) {
    case 'shell':
      params.cwd = params.cwd === undefined ? scriptsDir : at(params.cwd);
      break;
    case 'puppet':
      params.puppet_manifest = at(params.puppet_manifest);
      if (typeof params.puppet_modules === 'string')
        params.puppet_modules = params.puppet_modules.split(':').map(at).join(':');
      if (params.cwd === undefined) params.cwd = scriptsDir;
      break;
    case 'sync':
      params.src = at(params.src);
      break;
    case 'copy_files':
      if (Array.isArray(params.files))
        params.files = params.files.map((f) =>
          typeof f === 'object' && f !== null ? { ...f, src: at((f as { src?: unknown }).src) } : f,
        );
      break;
    default:
      return parameters;
  }
  return params;
}

/**
 * Whether a task runs in or reads from its package: every shell and puppet task (they run in
 * the package's folder unless they set an absolute `cwd` and absolute paths), a sync or
 * copy_files task with a relative source.
 */
export function needsPackage(type: TaskType, parameters: Record<string, unknown>): boolean {
  switch (type) {
    case 'shell':
      return parameters.cwd === undefined || isPackageRelative(parameters.cwd);
    case 'puppet':
      return (
        parameters.cwd === undefined ||
        isPackageRelative(parameters.cwd) ||
        isPackageRelative(parameters.puppet_manifest) ||
        (typeof parameters.puppet_modules === 'string' &&
          parameters.puppet_modules.split(':').some((m) => isPackageRelative(m)))
      );
    case 'sync':
      return isPackageRelative(parameters.src);
    case 'copy_files':
      return (
        Array.isArray(parameters.files) &&
        parameters.files.some(
          (f) => typeof f === 'object' && f !== null && isPackageRelative((f as { src?: unknown }).src),
        )
      );
    default:
      return false;
  }
}

/**
 * Names `ref` in every task that needs its package ({@link needsPackage}); a `$package` a task
 * file wrote itself is dropped, so a task can only use the package it was installed with.
 */
export function markPackageTasks(tasks: TaskDefinition[], ref: PackageRef | undefined): TaskDefinition[] {
  return tasks.map((task) => {
    const { [PACKAGE_PARAMETER]: written, ...rest } = task.parameters;
    const needs = ref !== undefined && needsPackage(task.type, rest);
    if (!needs && written === undefined) return task;
    return { ...task, parameters: needs ? { ...rest, [PACKAGE_PARAMETER]: { ...ref } } : rest };
  });
}

/** The package a dispatched task's parameters name, or a message saying what is wrong with it. */
export function packageOf(parameters: Record<string, unknown>): PackageRef | string | undefined {
  const v = parameters[PACKAGE_PARAMETER];
  if (v === undefined) return undefined;
  const r = v as Partial<Record<keyof PackageRef, unknown>>;
  if (
    typeof v !== 'object' ||
    v === null ||
    typeof r.name !== 'string' ||
    typeof r.version !== 'string' ||
    typeof r.digest !== 'string' ||
    !PACKAGE_DIGEST_RE.test(r.digest)
  )
    return `parameters.${PACKAGE_PARAMETER}: expected {name, version, digest (64 hex digits)}, got ${JSON.stringify(v)}`;
  return { name: r.name, version: r.version, digest: r.digest };
}
