/**
 * Base class of every error Granule raises on purpose. `code` is stable (scripts and
 * transports map it); `message` is written for the operator; `cause` keeps the origin.
 */
export class GranuleError<Code extends string = string> extends Error {
  constructor(
    readonly code: Code,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

export type Severity = 'error' | 'warning' | 'info';

/** One finding about user input: where it is and what is wrong with it. */
export interface Diagnostic {
  severity: Severity;
  code: string;
  message: string;
  /** File the finding is about, as the user named it. */
  file?: string;
  /** 1-based line in `file`, when known. */
  line?: number;
  /** Key path inside the document, e.g. `[3].parameters.timeout`. */
  path?: string;
  /** Task id the finding is about, when there is one. */
  taskId?: string;
}

// eslint-disable-next-line no-control-regex -- control characters are what is escaped
const CONTROL_CHARS = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g;

/**
 * Escapes control characters (a newline excepted) as `\uXXXX`: keys and values from user data
 * end up in messages, and a terminal must never receive raw bytes from them.
 */
export function escapeControlCharacters(text: string): string {
  return text.replace(CONTROL_CHARS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Renders a diagnostic as `file:line: [task id] message`, control characters escaped. */
export function formatDiagnostic(d: Diagnostic): string {
  const where = d.file ? `${d.file}${d.line ? `:${d.line}` : ''}: ` : '';
  const path = d.path ? `${d.path}: ` : '';
  const task = d.taskId && !d.message.includes(`'${d.taskId}'`) ? `task '${d.taskId}': ` : '';
  return escapeControlCharacters(`${where}${path}${task}${d.message}`);
}

/** Raised when user input is invalid; carries every error found, not only the first. */
export class InvalidInputError extends GranuleError<'INVALID_INPUT'> {
  constructor(readonly diagnostics: Diagnostic[]) {
    super(
      'INVALID_INPUT',
      diagnostics
        .filter((d) => d.severity === 'error')
        .map(formatDiagnostic)
        .join('\n'),
    );
  }
}

/** Raised when a command is called wrongly (unknown flag value, missing argument). */
export class UsageError extends GranuleError<'USAGE'> {
  constructor(message: string) {
    super('USAGE', message);
  }
}
