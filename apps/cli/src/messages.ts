import { formatDiagnostic, InvalidInputError } from '@granule/core';
import type { Diagnostic } from '@granule/core';

// The CLI's message style (docs/messages.md): one finding per line, `severity: where: what`.

/** `error: FILE:LINE: KEY.PATH: task 'ID': what was expected, got what was found`. */
export function renderFinding(d: Diagnostic): string {
  return `${d.severity}: ${formatDiagnostic(d)}`;
}

/** Writes findings to stderr, one per line. */
export function writeFindings(diagnostics: readonly Diagnostic[]): void {
  for (const d of diagnostics) process.stderr.write(`${renderFinding(d)}\n`);
}

const count = (n: number, word: string, plural = `${word}s`): string => `${n} ${n === 1 ? word : plural}`;

/** The one summary line a validating command ends with: `SUBJECT: invalid (2 errors, 1 warning)`. */
export function summaryLine(subject: string, counts: { errors: number; warnings: number; info?: number }): string {
  const parts = [count(counts.errors, 'error'), count(counts.warnings, 'warning')];
  if (counts.info !== undefined) parts.push(`${counts.info} info`);
  return `${subject}: ${counts.errors === 0 ? 'valid' : 'invalid'} (${parts.join(', ')})`;
}

const FS_REASONS: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'is a folder, expected a file',
  ENOTDIR: 'a part of the path is not a folder',
  ELOOP: 'too many levels of symbolic links',
  EMFILE: 'too many open files',
};

/** A file-system error in words, without the raw code or the path (the message names the path once). */
export function fsReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code && FS_REASONS[code]) return FS_REASONS[code];
  const message = (err as { message?: unknown } | null)?.message;
  // Node's messages read "CODE: text, syscall 'path'": keep the text only.
  const text = typeof message === 'string' ? message : String(err);
  return text.replace(/^[A-Z]+: /, '').replace(/, \w+ '.*'$/, '');
}

/** The input error for a file the user named that cannot be read: `FILE: no such file or directory`. */
export function unreadable(file: string, err: unknown): InvalidInputError {
  return new InvalidInputError([{ severity: 'error', code: 'FILE_UNREADABLE', file, message: fsReason(err) }]);
}

/**
 * A file-system error that reached the top unhandled (writing a trust store or a package into a
 * path that cannot hold it), as the operator's problem it is: `PATH: a part of the path is not a
 * folder` (exit 1), not an internal error with the raw code. Anything else: undefined.
 */
export function fileSystemProblem(err: unknown): InvalidInputError | undefined {
  const e = err as NodeJS.ErrnoException | null;
  if (!(e instanceof Error) || typeof e.code !== 'string' || !(e.code in FS_REASONS) || typeof e.path !== 'string')
    return undefined;
  return new InvalidInputError([{ severity: 'error', code: 'FILE_SYSTEM', file: e.path, message: fsReason(e) }]);
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

/** The candidate a mistyped name most likely meant (at most 2 edits, or a third of its length), if any. */
export function closest(name: string, candidates: Iterable<string>): string | undefined {
  let best: { c: string; d: number } | undefined;
  for (const c of candidates) {
    const d = editDistance(name, c);
    if (d <= Math.max(2, Math.floor(name.length / 3)) && (!best || d < best.d)) best = { c, d };
  }
  return best?.c;
}

/** The `Example(s):` block of a command's help; every line is a command written `granule ...`. */
export function helpExamples(...lines: string[]): string {
  return `\nExample${lines.length > 1 ? 's' : ''}:\n${lines.map((l) => `  ${l}`).join('\n')}\n`;
}
