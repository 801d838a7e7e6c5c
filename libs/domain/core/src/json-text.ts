import type { Diagnostic } from './errors';
import { INPUT_LIMITS } from './input-limits';
import { lineAt, textProblem } from './text-input';

/**
 * Deepest nesting of `[` / `{` in JSON text, outside strings, counted without recursion; stops
 * counting at `stopAt + 1`. Returns the depth and the offset where the bound was passed.
 */
export function jsonTextDepth(
  text: string,
  stopAt: number = INPUT_LIMITS.nestingDepth,
): { depth: number; at?: number } {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      depth++;
      if (depth > max) max = depth;
      if (depth > stopAt) return { depth, at: i };
    } else if (c === 93 || c === 125) depth--;
  }
  return { depth: max };
}

/**
 * Parses JSON a user sent (a request body, a file): refuses nesting deeper than the bound before
 * `JSON.parse` (whose recursion overflows the stack on deep input) and control characters, and
 * words a syntax error with its line, never echoing the text (V8's messages quote it).
 */
export function parseJsonText(
  text: string,
  what: string,
  maxDepth: number = INPUT_LIMITS.nestingDepth,
): { value: unknown } | { problem: Diagnostic } {
  const notText = textProblem(text, what);
  if (notText) return { problem: notText };
  const deep = jsonTextDepth(text, maxDepth);
  if (deep.at !== undefined)
    return {
      problem: {
        severity: 'error',
        code: 'INPUT_TOO_DEEP',
        file: what,
        line: lineAt(text, deep.at),
        message: `nested deeper than ${maxDepth} levels (mappings and lists inside each other), the bound`,
      },
    };
  try {
    return { value: JSON.parse(text) };
  } catch (err) {
    const position = /position (\d+)/.exec((err as Error).message);
    const line = position ? lineAt(text, Number(position[1])) : undefined;
    const reason = /Unexpected end/.test((err as Error).message) ? 'it ends too early' : 'a syntax error';
    return {
      problem: {
        severity: 'error',
        code: 'INPUT_NOT_JSON',
        file: what,
        ...(line ? { line } : {}),
        message: `not valid JSON (${reason}${position ? ` at character ${Number(position[1]) + 1}` : ''})`,
      },
    };
  }
}
