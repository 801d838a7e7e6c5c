import { InvalidTaskParametersError } from './task-runner.errors';

function describe(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return JSON.stringify(value);
}

/**
 * Reads typed values out of a task's parameters, collecting every problem; `check()` throws
 * them all at once so the operator fixes the task in one go.
 */
export class ParameterReader {
  readonly problems: string[] = [];

  constructor(
    private readonly taskType: string,
    private readonly params: Record<string, unknown>,
    private readonly prefix = 'parameters',
  ) {}

  /** A reader over a nested mapping at `keyPath` (e.g. `files[0]`). */
  nested(keyPath: string, value: Record<string, unknown>): ParameterReader {
    const child = new ParameterReader(this.taskType, value, `${this.prefix}.${keyPath}`);
    // Share one list so `check()` on the parent reports the children's problems too.
    (child as { problems: string[] }).problems = this.problems;
    return child;
  }

  requiredString(key: string): string {
    const v = this.params[key];
    if (v === undefined || v === null) {
      this.problems.push(`${this.prefix}.${key} is missing`);
      return '';
    }
    if (typeof v !== 'string' || v === '') {
      this.problems.push(`${this.prefix}.${key}: expected a non-empty string, got ${describe(v)}`);
      return '';
    }
    return v;
  }

  optionalString(key: string): string | undefined {
    const v = this.params[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') {
      this.problems.push(`${this.prefix}.${key}: expected a string, got ${describe(v)}`);
      return undefined;
    }
    return v;
  }

  /** A string that may be empty (file contents). */
  requiredText(key: string): string {
    const v = this.params[key];
    if (typeof v === 'string') return v;
    this.problems.push(
      v === undefined || v === null
        ? `${this.prefix}.${key} is missing`
        : `${this.prefix}.${key}: expected a string, got ${describe(v)}`,
    );
    return '';
  }

  /** Non-negative number of seconds. */
  seconds(key: string, fallback: number): number {
    const v = this.params[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      this.problems.push(`${this.prefix}.${key}: expected a non-negative number of seconds, got ${describe(v)}`);
      return fallback;
    }
    return v;
  }

  count(key: string, fallback: number): number {
    const v = this.params[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
      this.problems.push(`${this.prefix}.${key}: expected a whole number >= 0, got ${describe(v)}`);
      return fallback;
    }
    return v;
  }

  boolean(key: string, fallback: boolean): boolean {
    const v = this.params[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'boolean') {
      this.problems.push(`${this.prefix}.${key}: expected true or false, got ${describe(v)}`);
      return fallback;
    }
    return v;
  }

  /** String → string mapping; numbers and booleans are turned into strings. */
  env(key: string): Record<string, string> {
    const v = this.params[key];
    if (v === undefined || v === null) return {};
    if (typeof v !== 'object' || Array.isArray(v)) {
      this.problems.push(`${this.prefix}.${key}: expected a mapping of variable names to values, got ${describe(v)}`);
      return {};
    }
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(v)) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
        this.problems.push(`${this.prefix}.${key}: '${name}' is not a valid variable name`);
      else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
        out[name] = String(value);
      else this.problems.push(`${this.prefix}.${key}.${name}: expected a string, got ${describe(value)}`);
    }
    return out;
  }

  /**
   * A file mode: `'0644'`/`'644'` (octal text) or a number, which is read digit by digit as
   * octal (YAML 1.2 reads an unquoted `0644` as the number 644); digits 8 and 9 are refused.
   */
  mode(key: string, fallback: number): number {
    const v = this.params[key];
    if (v === undefined || v === null) return fallback;
    const text = typeof v === 'string' ? v : typeof v === 'number' && Number.isInteger(v) ? String(v) : '';
    if (/^0?[0-7]{3,4}$/.test(text)) return parseInt(text, 8);
    this.problems.push(`${this.prefix}.${key}: expected a mode like '0644', got ${describe(v)}`);
    return fallback;
  }

  /** A value the caller validates itself. */
  raw(key: string): unknown {
    return this.params[key];
  }

  problem(message: string): void {
    this.problems.push(message);
  }

  /** Throws `InvalidTaskParametersError` with every problem found so far. */
  check(): void {
    if (this.problems.length > 0) throw new InvalidTaskParametersError(this.taskType, this.problems);
  }
}

/** `0o644` → `0644`. */
export function formatMode(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}
