import { InvalidInputError } from './errors';

/**
 * Bounds on what users send (docs/bad-input.md lists them). Anything over a bound is refused
 * where it enters, naming the field, the bound and the size, so nothing stored can later make
 * a reply too big for NATS (1 MiB by default) or a process run out of stack.
 */
export const INPUT_LIMITS = {
  /** An HTTP request body (plugin installs carry every file of the plugin). */
  httpBodyBytes: 16 * 1024 * 1024,
  /** Nesting of any JSON or YAML document (mappings and lists inside each other). */
  nestingDepth: 64,
  /** Nodes of a YAML document after its aliases are expanded (an alias bomb expands to billions). */
  yamlExpandedNodes: 1_000_000,
  /** A text input file (tasks, nodes, strategy, cluster). */
  inputFileBytes: 64 * 1024 * 1024,
  /** Any single string field of a request, unless a field says otherwise. */
  fieldBytes: 64 * 1024,
  /** A label key (as Kubernetes allows: a DNS prefix and a name). */
  labelKeyBytes: 253,
  /** A label value. */
  labelValueBytes: 1024,
  /** Labels of one node. */
  labelCount: 64,
  /** Labels of one node as JSON. */
  labelsJsonBytes: 16 * 1024,
  /** Tags or roles of one node. */
  tagCount: 256,
  /** An environment's settings as JSON. */
  settingsJsonBytes: 256 * 1024,
  /** A release's attributes (its metadata beyond graphs), as JSON. */
  releaseAttributesJsonBytes: 256 * 1024,
  /** A strategy document. */
  strategyDocumentBytes: 256 * 1024,
  /** Task records of one graph (one upload, one plugin graph). */
  tasksPerGraph: 5_000,
  /** Task records of one graph as JSON. */
  graphJsonBytes: 768 * 1024,
  /** Nodes of one plan (environment or inline). */
  planNodes: 20_000,
  /** Task instances of one plan (a task on a node is one instance). */
  planInstances: 5_000_000,
} as const;

export type InputLimit = keyof typeof INPUT_LIMITS;

/** Bytes of `text` in UTF-8. */
export function utf8Bytes(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** Bytes of `value` as JSON (0 for what JSON cannot hold). */
export function jsonBytes(value: unknown): number {
  const text = JSON.stringify(value);
  return text === undefined ? 0 : utf8Bytes(text);
}

/** `1.5 MiB`, `12 KiB`, `300 bytes`. */
export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${+(n / (1024 * 1024)).toFixed(1)} MiB`;
  if (n >= 1024) return `${+(n / 1024).toFixed(1)} KiB`;
  return `${n} bytes`;
}

/** The message for a size over a bound: `at most 16 KiB as JSON, got 15 MiB`. */
export function overLimitMessage(limit: number, size: number, unit: 'bytes' | string, how = ''): string {
  const fmt = (n: number): string => (unit === 'bytes' ? formatBytes(n) : `${n} ${unit}`);
  return `expected at most ${fmt(limit)}${how ? ` ${how}` : ''}, got ${fmt(size)}`;
}

/** Throws `INPUT_TOO_LARGE` naming `path` when `size` is over `limit`. */
export function assertWithinLimit(
  path: string,
  size: number,
  limit: number,
  unit: 'bytes' | string,
  how = '',
  file?: string,
): void {
  if (size <= limit) return;
  throw new InvalidInputError([
    {
      severity: 'error',
      code: 'INPUT_TOO_LARGE',
      path,
      message: overLimitMessage(limit, size, unit, how),
      ...(file ? { file } : {}),
    },
  ]);
}
