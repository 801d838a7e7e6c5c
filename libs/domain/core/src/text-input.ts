import type { Diagnostic } from './errors';
import { INPUT_LIMITS, formatBytes } from './input-limits';

/** 1-based line of offset `index` in `text`. */
export function lineAt(text: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

// C0 controls other than tab, line feed and carriage return: YAML and JSON text has none, and a
// terminal must never be sent them (a binary file's bytes can rewrite what the operator sees).
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/**
 * Why `text` (what a user gave as a YAML or JSON document) is not a text document, or
 * undefined when it is one: a NUL or another control character (a binary file), a UTF-16 byte
 * order mark, or U+FFFD (bytes that were not UTF-8). The message names the line, never the bytes.
 */
export function textProblem(text: string, file: string, code = 'INPUT_NOT_TEXT'): Diagnostic | undefined {
  const at = (index: number, message: string): Diagnostic => ({
    severity: 'error',
    code,
    file,
    line: lineAt(text, index),
    message,
  });
  const nul = text.indexOf('\u0000');
  if (nul >= 0) return at(nul, 'not a text file: it has a NUL byte (a binary file?); expected UTF-8 YAML or JSON');
  const control = CONTROL.exec(text);
  if (control) {
    const c = control[0].charCodeAt(0).toString(16).padStart(4, '0').toUpperCase();
    return at(control.index, `not a text file: it has the control character U+${c}; expected UTF-8 YAML or JSON`);
  }
  const replacement = text.indexOf('\ufffd');
  if (replacement >= 0)
    return at(replacement, 'not valid UTF-8 (a byte sequence that is not UTF-8 text); save the file as UTF-8');
  return undefined;
}

/**
 * Decodes bytes a user gave as a text document: UTF-8 only (a UTF-8 byte order mark is dropped).
 * Returns the text, or a diagnostic naming the file and line of the first bad byte (UTF-16 and
 * other encodings are named as such; the bytes themselves are never shown).
 */
export function decodeTextFile(bytes: Uint8Array, file: string): { text: string } | { problem: Diagnostic } {
  const fail = (message: string, line?: number): { problem: Diagnostic } => ({
    problem: { severity: 'error', code: 'INPUT_NOT_TEXT', file, message, ...(line ? { line } : {}) },
  });
  if (bytes.length > INPUT_LIMITS.inputFileBytes)
    return fail(
      `too large: expected at most ${formatBytes(INPUT_LIMITS.inputFileBytes)}, got ${formatBytes(bytes.length)}`,
    );
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff))
    return fail('is UTF-16 text (it starts with a UTF-16 byte order mark); save it as UTF-8', 1);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    // Find the line of the first byte that is not UTF-8.
    const lenient = new TextDecoder('utf-8').decode(bytes);
    const nul = bytes.indexOf(0);
    if (nul >= 0)
      return fail(
        'not a text file: it has a NUL byte (a binary file?); expected UTF-8 YAML or JSON',
        lineAt(lenient, lenient.indexOf('\u0000')),
      );
    return fail(
      'not valid UTF-8 (a byte sequence that is not UTF-8 text); save the file as UTF-8',
      lineAt(lenient, lenient.indexOf('\ufffd')),
    );
  }
  const problem = textProblem(text, file);
  return problem ? { problem } : { text };
}
