import { InvalidInputError } from './errors';

/**
 * The rule of one kind of identifier. Every place that takes such an identifier (config-store,
 * the CLI, the planner, the agent, deploy/node-agent/install.sh) checks it with this rule, so an
 * identifier refused anywhere is refused everywhere, with the same words.
 */
export interface IdentifierRule {
  /** What the identifier is called in messages: `node uid`. */
  readonly what: string;
  readonly pattern: RegExp;
  /** The pattern in words, for messages. */
  readonly rule: string;
}

// Node uids name NATS subjects (`dispatch.<uid>`), JetStream consumers (`agent-<uid>`), Redis
// keys and dispatch ids (`<run>/<task>@<uid>/<attempt>`): no dots (they split subject tokens),
// no `*` or `>` (subject wildcards), no `/`, `@`, `:` or spaces.
const NODE_UID: IdentifierRule = {
  what: 'node uid',
  pattern: /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/,
  rule: "1 to 63 letters, digits, '_' or '-', starting with a letter or digit",
};

// Names operators type (environments, releases, strategies): dots allowed (`ubuntu-22.04`).
const NAME: Omit<IdentifierRule, 'what'> = {
  pattern: /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/,
  rule: "1 to 63 letters, digits, '_', '.' or '-', starting with a letter or digit",
};

/** Every identifier kind and its rule. */
export const IDENTIFIER_RULES = {
  nodeUid: NODE_UID,
  environmentName: { what: 'environment name', ...NAME },
  releaseName: { what: 'release name', ...NAME },
  strategyName: { what: 'strategy name', ...NAME },
  // A plugin's name is also a directory (/etc/fuel/plugins/<name>) and a package file name.
  pluginName: {
    what: 'plugin name',
    pattern: /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/,
    rule: "1 to 63 letters, digits, '_' or '-', starting with a letter or digit",
  },
  // Run ids name event streams (`run-<id>`) and NATS subjects (`result.<id>`).
  runId: {
    what: 'run id',
    pattern: /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/,
    rule: "1 to 64 letters, digits, '_' or '-', starting with a letter or digit",
  },
  // Task ids appear in `task@node` references, dispatch ids and comma-separated CLI lists;
  // generated legacy ids are `<scope>.<stage>.<n>`, so dots are allowed.
  taskId: {
    what: 'task id',
    pattern: /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$/,
    rule: "1 to 128 letters, digits, '_', '.', ':' or '-', starting with a letter, digit or '_'",
  },
} as const satisfies Record<string, IdentifierRule>;

export type IdentifierKind = keyof typeof IDENTIFIER_RULES;

/** Renders a value found in input for a message: quoted, control characters escaped, long ones cut. */
export function quoteFound(value: unknown, max = 80): string {
  if (typeof value !== 'string') {
    if (value === undefined) return 'nothing';
    if (value === null) return 'null';
    if (Array.isArray(value)) return 'a list';
    if (typeof value === 'object') return 'a mapping';
    return String(value);
  }
  const cut = value.length > max ? `${value.slice(0, max)}…` : value;
  const shown = JSON.stringify(cut).replace(
    /[\u007f-\u009f\u00ad\u2028\u2029\ufeff\ufffd]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return value.length > max ? `${shown} (${value.length} characters)` : shown;
}

/** True when `value` is a valid identifier of `kind`. */
export function isIdentifier(kind: IdentifierKind, value: unknown): value is string {
  return typeof value === 'string' && IDENTIFIER_RULES[kind].pattern.test(value);
}

/** The message for a value that breaks the rule of `kind`, or undefined when it keeps it. */
export function identifierProblem(kind: IdentifierKind, value: unknown): string | undefined {
  if (isIdentifier(kind, value)) return undefined;
  const r = IDENTIFIER_RULES[kind];
  const article = /^[aeiou]/.test(r.what) ? 'an' : 'a';
  return `expected ${article} ${r.what} of ${r.rule}, got ${quoteFound(value)}`;
}

/** Throws `InvalidInputError` (code `INVALID_IDENTIFIER`) when `value` breaks the rule of `kind`. */
export function assertIdentifier(
  kind: IdentifierKind,
  value: unknown,
  where: { path?: string; file?: string } = {},
): string {
  const problem = identifierProblem(kind, value);
  if (problem === undefined) return value as string;
  throw new InvalidInputError([{ severity: 'error', code: 'INVALID_IDENTIFIER', message: problem, ...where }]);
}
