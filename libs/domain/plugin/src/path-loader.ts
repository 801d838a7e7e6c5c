import type { Diagnostic } from '@granule/core';
import type { LineLocator, PathSegment } from '@granule/task-model';
import { DATA_FILE_RE, DataFile, describeValue, formatPath, isPlainObject, parseDataFile } from './data-file';
import { PluginFiles, isGlobPattern, normalizePluginPath } from './plugin-files.port';

/** Where a loaded object sits: its file, its key path in that file, and the file's lines. */
export interface Origin {
  file: string;
  path: PathSegment[];
  locate: LineLocator;
}

/**
 * State shared by one load: files read once, the origin of every loaded object (so a record
 * merged from a glob still reports its own file and line), and every diagnostic.
 */
export class LoadContext {
  readonly diagnostics: Diagnostic[] = [];
  readonly origins = new WeakMap<object, Origin>();
  private readonly cache = new Map<string, Promise<DataFile | undefined>>();

  constructor(readonly files: PluginFiles) {}

  /** Reads and parses a data file (cached); read and syntax errors are recorded once. */
  readData(path: string): Promise<DataFile | undefined> {
    let pending = this.cache.get(path);
    if (!pending) {
      pending = this.read(path);
      this.cache.set(path, pending);
    }
    return pending;
  }

  private async read(path: string): Promise<DataFile | undefined> {
    let text: string;
    try {
      text = await this.files.readText(path);
    } catch (err) {
      this.diagnostics.push({
        severity: 'error',
        code: 'PLUGIN_FILE_UNREADABLE',
        message: `cannot read: ${readFailure(err)}`,
        file: path,
      });
      return undefined;
    }
    const loaded = parseDataFile(text, path);
    this.diagnostics.push(...loaded.diagnostics);
    this.register(loaded.data, { file: path, path: [], locate: loaded.locate });
    return loaded;
  }

  /** Records the origin of `value` and of every object and list inside it. */
  register(value: unknown, origin: Origin): void {
    if (typeof value !== 'object' || value === null) return;
    if (!this.origins.has(value)) this.origins.set(value, origin);
    if (Array.isArray(value)) value.forEach((v, i) => this.register(v, { ...origin, path: [...origin.path, i] }));
    else for (const [k, v] of Object.entries(value)) this.register(v, { ...origin, path: [...origin.path, k] });
  }

  /** Adds a diagnostic located at `path` inside the file of `origin`. */
  report(
    severity: Diagnostic['severity'],
    code: string,
    origin: Origin | undefined,
    rel: PathSegment[],
    message: string,
  ): void {
    const full = [...(origin?.path ?? []), ...rel];
    const d: Diagnostic = { severity, code, message };
    if (origin) d.file = origin.file;
    if (full.length > 0) d.path = formatPath(full);
    const line = origin?.locate(full);
    if (line !== undefined) d.line = line;
    this.diagnostics.push(d);
  }
}

const MAX_DEPTH = 16;

/**
 * Processes every key ending in `_path`, at any depth of `value` (seed 003):
 * - a data file (`.yaml`, `.yml`, `.json`) is loaded and put under the key without the suffix;
 *   the `_path` key is removed; `_path` keys inside the loaded data are processed the same way;
 * - a directory, or a file that is not a data file, is left as it is;
 * - a glob loads every match in sorted order and merges them: all list roots → one list,
 *   all mapping roots → one mapping (later files win), mixed roots → an error naming the files;
 *   no match → an error naming the pattern;
 * - a missing path → an error naming the key path and the path.
 * Paths are relative to the plugin root. Returns a new tree; the input is not changed.
 */
export async function resolvePathKeys(
  ctx: LoadContext,
  value: unknown,
  origin: Origin | undefined,
  stack: string[] = [],
): Promise<unknown> {
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (let i = 0; i < value.length; i++)
      out.push(await resolvePathKeys(ctx, value[i], childOrigin(ctx, value[i], origin, i), stack));
    if (origin) ctx.origins.set(out, origin);
    return out;
  }
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  if (origin) ctx.origins.set(out, origin);
  for (const [key, raw] of Object.entries(value)) {
    if (!key.endsWith('_path') || key === '_path') {
      if (!(key in out)) out[key] = await resolvePathKeys(ctx, raw, childOrigin(ctx, raw, origin, key), stack);
      continue;
    }
    const target = key.slice(0, -'_path'.length);
    if (typeof raw !== 'string' || raw.trim() === '') {
      ctx.report(
        'error',
        'PLUGIN_BAD_PATH',
        origin,
        [key],
        `expected a path relative to the plugin root, got ${describeValue(raw)}`,
      );
      continue;
    }
    const loaded = await loadPathValue(ctx, raw, origin, key, stack);
    if (loaded.kind === 'keep') {
      out[key] = raw;
      continue;
    }
    if (loaded.kind === 'failed') continue;
    if (target in value) {
      ctx.report(
        'warning',
        'PLUGIN_PATH_OVERRIDES_KEY',
        origin,
        [target],
        `'${target}' is also loaded from ${key} (${raw}); the loaded data is used`,
      );
    }
    out[target] = loaded.data;
  }
  return out;
}

function childOrigin(
  ctx: LoadContext,
  child: unknown,
  parent: Origin | undefined,
  seg: PathSegment,
): Origin | undefined {
  if (typeof child === 'object' && child !== null) {
    const own = ctx.origins.get(child);
    if (own) return own;
  }
  return parent ? { ...parent, path: [...parent.path, seg] } : undefined;
}

type PathValue = { kind: 'data'; data: unknown } | { kind: 'keep' } | { kind: 'failed' };

async function loadPathValue(
  ctx: LoadContext,
  raw: string,
  origin: Origin | undefined,
  key: string,
  stack: string[],
): Promise<PathValue> {
  const fail = (code: string, message: string): PathValue => {
    ctx.report('error', code, origin, [key], message);
    return { kind: 'failed' };
  };
  const path = normalizePluginPath(raw);
  if (path === undefined)
    return fail('PLUGIN_BAD_PATH', `${raw} must be a path inside the plugin (no leading '/', no '..' above the root)`);
  if (stack.length >= MAX_DEPTH)
    return fail('PLUGIN_PATH_CYCLE', `${raw}: _path files nest deeper than ${MAX_DEPTH} levels (${stack.join(' → ')})`);

  if (isGlobPattern(raw)) {
    const matches = (await ctx.files.glob(path)).filter((p) => DATA_FILE_RE.test(p));
    if (matches.length === 0) return fail('PLUGIN_GLOB_NO_MATCH', `no data file matches the pattern '${raw}'`);
    const loaded: { file: string; data: unknown }[] = [];
    for (const file of matches) {
      const data = await loadFile(ctx, file, stack);
      if (data === FAILED) return { kind: 'failed' };
      if (data !== null && data !== undefined) loaded.push({ file, data });
    }
    const lists = loaded.filter((l) => Array.isArray(l.data));
    const maps = loaded.filter((l) => isPlainObject(l.data));
    if (lists.length > 0 && maps.length > 0) {
      return fail(
        'PLUGIN_GLOB_MIXED_ROOTS',
        `the files matching '${raw}' must all hold a list or all hold a mapping; lists: ${lists.map((l) => l.file).join(', ')}; mappings: ${maps.map((l) => l.file).join(', ')}`,
      );
    }
    const scalars = loaded.filter((l) => !Array.isArray(l.data) && !isPlainObject(l.data));
    if (scalars.length > 0)
      return fail(
        'PLUGIN_GLOB_MIXED_ROOTS',
        `the files matching '${raw}' must hold a list or a mapping; ${scalars.map((l) => l.file).join(', ')} hold a single value`,
      );
    if (lists.length > 0) return { kind: 'data', data: lists.flatMap((l) => l.data as unknown[]) };
    return { kind: 'data', data: Object.assign({}, ...maps.map((m) => m.data)) };
  }

  const kind = await ctx.files.stat(path);
  if (kind === undefined) return fail('PLUGIN_PATH_NOT_FOUND', `${raw} does not exist`);
  if (kind === 'symlink') return fail('PLUGIN_BAD_PATH', `${raw} is a symlink; plugins must hold real files`);
  if (kind !== 'file' || !DATA_FILE_RE.test(path)) return { kind: 'keep' };
  const data = await loadFile(ctx, path, stack);
  return data === FAILED ? { kind: 'failed' } : { kind: 'data', data };
}

const FAILED = Symbol('failed');

async function loadFile(ctx: LoadContext, file: string, stack: string[]): Promise<unknown> {
  if (stack.includes(file)) {
    ctx.diagnostics.push({
      severity: 'error',
      code: 'PLUGIN_PATH_CYCLE',
      message: `${file} includes itself through _path keys: ${[...stack, file].join(' → ')}`,
      file,
    });
    return FAILED;
  }
  const loaded = await ctx.readData(file);
  if (!loaded || loaded.diagnostics.some((d) => d.severity === 'error')) return FAILED;
  return resolvePathKeys(
    ctx,
    loaded.data,
    ctx.origins.get(loaded.data as object) ?? { file, path: [], locate: loaded.locate },
    [...stack, file],
  );
}

/**
 * Deep merge for `base_release_path`: mappings merge key by key (recursively); lists and
 * scalars of `override` replace those of `base`.
 */
export function deepMerge(base: unknown, override: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(override)) return override === undefined ? base : override;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(override)) out[k] = k in base ? deepMerge(base[k], v) : v;
  return out;
}

/** Why the port could not read a file, in words: no raw error code, no path (the finding names the file). */
function readFailure(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'is a folder, expected a file';
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/^[A-Z]+: /, '').replace(/, \w+ '.*'$/, '');
}
