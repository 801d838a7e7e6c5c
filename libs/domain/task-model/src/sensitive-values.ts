import { TASK_TYPES } from './types';
import type { PathSegment } from './yaml-source';

/**
 * Which values are secrets (ADR 0023), as plain functions over data: the default names, the
 * explicit markers, and what sealing and masking do to a tree. The cipher itself is an
 * infrastructure concern (`@granule/secrets`); here a sealed value is only a shape.
 */

/** A value encrypted for the installation's key: `{"$sealed": "<sender public key>.<base64 box>"}`. */
export interface SealedValue {
  $sealed: string;
}

/** What the CLI and every other display print in place of a secret. */
export const MASK = '***';

/** Seals one value (any JSON value) for the installation's public key. */
export type Seal = (value: unknown) => SealedValue;

/** The key path of a value inside a tree (`['env', 'DB_PASSWORD']`). */
export type ValuePath = PathSegment[];

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** True for `{"$sealed": "..."}` and nothing else (a sealed value has exactly that one key). */
export function isSealedValue(value: unknown): value is SealedValue {
  if (!isObject(value) || typeof value.$sealed !== 'string') return false;
  for (const key in value) if (key !== '$sealed') return false;
  return true;
}

// A name containing one of these anywhere is sensitive (`dbpassword`, `AWS_SECRET_ACCESS_KEY`).
const SENSITIVE_PARTS = ['password', 'passwd', 'passphrase', 'secret', 'credential'];
// A name with one of these as a whole word is (`api_key`, `apiKey`, `DB_PASS`, `GITHUB_TOKEN`), but
// `keystone_url`, `monkey` and `tokenizer` are not.
const SENSITIVE_WORDS = new Set(['pass', 'token', 'tokens', 'key', 'keys', 'apikey', 'privkey', 'privatekey']);

/** `apiKey` → `api key`, `DBPassword` → `db password`, `SSH_PRIVATE_KEY` → `ssh private key`. */
function words(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/**
 * True when a parameter, variable or setting of this name holds a secret by default: it contains
 * password, passwd, passphrase, secret or credential, or has pass, token(s), key(s), apikey or
 * privkey as a word (`DB_PASS`, `api_key`, `apiKey`, `GITHUB_TOKEN`). A public key is not a
 * secret: a name with the word `public` and no other marker is not sensitive.
 */
export function isSensitiveName(name: string): boolean {
  const lower = name.toLowerCase();
  if (SENSITIVE_PARTS.some((p) => lower.includes(p))) return true;
  const parts = words(name);
  if (parts.includes('public')) return false;
  return parts.some((w) => SENSITIVE_WORDS.has(w));
}

/** Parameters the orchestrator reads itself (a task's time budget): never sealed, never marked. */
export const UNSEALABLE_PARAMETERS: readonly string[] = ['timeout', 'retries', 'interval'];

/** Fuel's setting leaf `{value: ..., type: password}`, or Granule's `{value: ..., sensitive: true}`. */
function isMarkedLeaf(node: Record<string, unknown>): boolean {
  return 'value' in node && (node.type === 'password' || node.sensitive === true);
}

const TASK_TYPE_NAMES = new Set<string>([...TASK_TYPES, 'rsync']);

/** A task record inside a data file: a known `type` and a `parameters` mapping. */
function isTaskRecord(node: Record<string, unknown>): boolean {
  return typeof node.type === 'string' && TASK_TYPE_NAMES.has(node.type) && isObject(node.parameters);
}

/** The names a task's `sensitive` list marks (entries that are not strings are the parser's to report). */
export function markedNames(sensitive: unknown): string[] {
  if (typeof sensitive === 'string') return [sensitive];
  return Array.isArray(sensitive) ? sensitive.filter((s): s is string => typeof s === 'string') : [];
}

/** What makes a value sensitive in one kind of tree. */
interface Scan {
  /** Every value under a sensitive name is (parameters, settings); otherwise only setting leaves are (data files). */
  names: boolean;
  /** Extra names marked sensitive (a task's `sensitive` list). */
  marked: ReadonlySet<string>;
  /** Look for task records (data files). */
  tasks: boolean;
}

function scan(node: unknown, path: ValuePath, how: Scan, out: ValuePath[]): void {
  if (isSealedValue(node)) {
    out.push(path);
    return;
  }
  if (Array.isArray(node)) {
    node.forEach((item, i) => scan(item, [...path, i], how, out));
    return;
  }
  if (!isObject(node)) return;
  if (how.tasks && isTaskRecord(node)) {
    const params = sensitiveParameterPaths(node.parameters as Record<string, unknown>, markedNames(node.sensitive));
    for (const p of params) out.push([...path, 'parameters', ...p]);
    return;
  }
  if (isMarkedLeaf(node)) {
    out.push([...path, 'value']);
    return;
  }
  for (const [key, value] of Object.entries(node)) {
    const named = isSensitiveName(key) || how.marked.has(key);
    if (named && isObject(value) && 'value' in value && !isSealedValue(value)) out.push([...path, key, 'value']);
    else if (named && how.names) out.push([...path, key]);
    else scan(value, [...path, key], how, out);
  }
}

/**
 * The paths of a task's parameters that hold secrets: every value under a sensitive name
 * (`password`, `env.DB_TOKEN`, `config.api_key`) or a name the task's `sensitive` list marks, at
 * any depth; setting leaves marked `type: password` or `sensitive: true`; and values already sealed.
 */
export function sensitiveParameterPaths(
  parameters: Record<string, unknown>,
  marked: readonly string[] = [],
): ValuePath[] {
  const out: ValuePath[] = [];
  scan(parameters, [], { names: true, marked: new Set(marked), tasks: false }, out);
  return out;
}

/**
 * The paths of an environment's settings that hold secrets: values under a sensitive name (for
 * Fuel's `{value, ...}` leaves, the `value`), leaves marked `type: password` or `sensitive: true`,
 * and values already sealed.
 */
export function sensitiveSettingPaths(settings: Record<string, unknown>): ValuePath[] {
  const out: ValuePath[] = [];
  scan(settings, [], { names: true, marked: new Set(), tasks: false }, out);
  return out;
}

/**
 * The paths of a data file or release record (plugin YAML, release attributes) that hold
 * secrets: every task record's sensitive parameters, setting leaves marked `type: password` or
 * `sensitive: true` or under a sensitive name, and values already sealed. A plain value under a
 * sensitive name elsewhere is left alone (Fuel data uses such names for other things).
 */
export function sensitiveDataPaths(data: unknown): ValuePath[] {
  const out: ValuePath[] = [];
  scan(data, [], { names: false, marked: new Set(), tasks: true }, out);
  return out;
}

/** The value at `path`, or undefined. */
export function valueAt(tree: unknown, path: readonly PathSegment[]): unknown {
  let node = tree;
  for (const step of path) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string | number, unknown>)[step];
  }
  return node;
}

/** A value worth hiding: not absent, not null, not an empty string. */
function holdsSomething(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

/** True when the value at a sensitive path is still in clear (something there, not sealed). */
export function isClearSecret(value: unknown): boolean {
  return holdsSomething(value) && !isSealedValue(value);
}

/** A copy of `tree` with `replace(value)` at each path (containers on the way copied, the rest shared). */
export function replaceAt<T>(tree: T, paths: readonly ValuePath[], replace: (value: unknown) => unknown): T {
  if (paths.length === 0) return tree;
  const mine = new Set<unknown>();
  const own = (node: unknown): unknown => {
    if (mine.has(node)) return node;
    const copy = Array.isArray(node) ? [...node] : isObject(node) ? { ...node } : node;
    mine.add(copy);
    return copy;
  };
  const root = own(tree);
  for (const path of paths) {
    if (path.length === 0) continue;
    let node = root as Record<string | number, unknown>;
    let found = true;
    for (const step of path.slice(0, -1)) {
      const child = node[step];
      if (typeof child !== 'object' || child === null) {
        found = false;
        break;
      }
      node[step] = own(child);
      node = node[step] as Record<string | number, unknown>;
    }
    const last = path[path.length - 1];
    if (found && Object.hasOwn(node, last)) node[last] = replace(node[last]);
  }
  return root as T;
}

/**
 * Seals the clear values at `paths` (already sealed, empty and null ones are left as they are).
 * Without `seal` nothing changes and `clear` lists the paths that would have needed it, so the
 * caller can refuse the input naming each one.
 */
export function sealAt<T>(tree: T, paths: readonly ValuePath[], seal?: Seal): { value: T; clear: ValuePath[] } {
  const clear = paths.filter((p) => isClearSecret(valueAt(tree, p)));
  if (!seal || clear.length === 0) return { value: tree, clear: seal ? [] : clear };
  return { value: replaceAt(tree, clear, (v) => seal(v)), clear: [] };
}

/** For display: `***` at each path that holds something, and in place of every sealed value anywhere. */
export function maskAt<T>(tree: T, paths: readonly ValuePath[]): T {
  const masked = replaceAt(
    tree,
    paths.filter((p) => holdsSomething(valueAt(tree, p))),
    () => MASK,
  );
  return maskSealed(masked);
}

/** Where a tree holds sealed values (any depth). */
export function sealedPaths(tree: unknown): ValuePath[] {
  const out: ValuePath[] = [];
  const walk = (node: unknown, path: ValuePath): void => {
    if (isSealedValue(node)) out.push(path);
    else if (Array.isArray(node)) node.forEach((item, i) => walk(item, [...path, i]));
    else if (isObject(node)) for (const [key, value] of Object.entries(node)) walk(value, [...path, key]);
  };
  walk(tree, []);
  return out;
}

/** For display: `***` in place of every sealed value of a tree (any depth). */
export function maskSealed<T>(tree: T): T {
  const walk = (node: unknown): unknown => {
    if (isSealedValue(node)) return MASK;
    if (Array.isArray(node)) {
      let changed = false;
      const out = node.map((item) => {
        const v = walk(item);
        changed ||= v !== item;
        return v;
      });
      return changed ? out : node;
    }
    if (!isObject(node)) return node;
    let out: Record<string, unknown> | undefined;
    for (const [key, value] of Object.entries(node)) {
      const v = walk(value);
      if (v !== value) (out ??= { ...node })[key] = v;
    }
    return out ?? node;
  };
  return walk(tree) as T;
}

/**
 * The text forms of the values at `paths` (every string and number inside them): what an agent
 * must mask in the output of the task these values were given to.
 */
export function textsAt(tree: unknown, paths: readonly ValuePath[]): string[] {
  const out = new Set<string>();
  const collect = (node: unknown): void => {
    if (typeof node === 'string') {
      if (node !== '') out.add(node);
    } else if (typeof node === 'number') out.add(String(node));
    else if (Array.isArray(node)) node.forEach(collect);
    else if (isObject(node)) Object.values(node).forEach(collect);
  };
  for (const p of paths) collect(valueAt(tree, p));
  return [...out];
}
