import { ConditionSyntaxError } from './condition.errors';
import type { ConditionNamespace } from './condition.types';

export type Punctuation =
  '(' | ')' | '[' | ']' | ',' | '.' | '==' | '!=' | '<' | '<=' | '>' | '>=' | '!' | '&&' | '||' | '-';

export type Token =
  | { type: 'string'; value: string; column: number; text: string }
  | { type: 'number'; value: number; column: number; text: string }
  | { type: 'name'; value: string; column: number; text: string }
  | { type: 'reference'; namespace: ConditionNamespace; path: string[]; column: number; text: string }
  | { type: 'punct'; value: Punctuation; column: number; text: string }
  | { type: 'end'; column: number; text: string };

export const NAMESPACES: readonly ConditionNamespace[] = ['cluster', 'settings', 'release', 'node'];

const ESCAPES: Record<string, string> = { '\\': '\\', "'": "'", '"': '"', n: '\n', t: '\t', r: '\r' };
const TWO_CHAR: readonly Punctuation[] = ['==', '!=', '<=', '>=', '&&', '||'];
const ONE_CHAR: readonly Punctuation[] = ['(', ')', '[', ']', ',', '.', '<', '>', '!', '-'];

const isDigit = (c: string): boolean => c >= '0' && c <= '9';
const isNameStart = (c: string): boolean => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
const isNamePart = (c: string): boolean => isNameStart(c) || isDigit(c);
// Path keys may contain '-' (plugin names): the language has no subtraction, so it is unambiguous.
const isKeyPart = (c: string): boolean => isNamePart(c) || c === '-';
const isSpace = (c: string): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r';

/** How a token is named in error messages. */
export function describeToken(token: Token): string {
  switch (token.type) {
    case 'end':
      return 'end of expression';
    case 'string':
      return `string ${token.text}`;
    case 'number':
      return `number ${token.text}`;
    default:
      return `'${token.text}'`;
  }
}

/** Splits a condition into tokens; the last one is always `end`. */
export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  function fail(message: string, at: number): never {
    throw new ConditionSyntaxError(message, source, at + 1);
  }
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    if (isSpace(c)) {
      i++;
      continue;
    }
    const start = i;
    if (c === "'" || c === '"') {
      let value = '';
      i++;
      for (;;) {
        if (i >= source.length) {
          fail(
            `unterminated string at column ${start + 1}: expected a closing ${c} before the end of the expression`,
            start,
          );
        }
        const ch = source[i];
        if (ch === c) break;
        if (ch === '\\') {
          const next = source[i + 1];
          const escaped = next === undefined ? undefined : ESCAPES[next];
          if (escaped === undefined) {
            const shown = next === undefined ? '\\' : `\\${next}`;
            fail(`unknown escape '${shown}' at column ${i + 1} (known: \\\\ \\' \\" \\n \\t \\r)`, i);
          }
          value += escaped;
          i += 2;
          continue;
        }
        value += ch;
        i++;
      }
      i++;
      tokens.push({ type: 'string', value, column: start + 1, text: source.slice(start, i) });
      continue;
    }
    if (isDigit(c)) {
      while (i < source.length && isDigit(source[i])) i++;
      if (source[i] === '.') {
        i++;
        if (!isDigit(source[i] ?? '')) {
          fail(
            `malformed number '${source.slice(start, i)}' at column ${start + 1}: expected a digit after '.'`,
            start,
          );
        }
        while (i < source.length && isDigit(source[i])) i++;
      }
      if (i < source.length && isNamePart(source[i])) {
        while (i < source.length && isNamePart(source[i])) i++;
        fail(`malformed number '${source.slice(start, i)}' at column ${start + 1}`, start);
      }
      const text = source.slice(start, i);
      tokens.push({ type: 'number', value: Number(text), column: start + 1, text });
      continue;
    }
    if (isNameStart(c)) {
      while (i < source.length && isNamePart(source[i])) i++;
      const name = source.slice(start, i);
      if (source[i] !== ':') {
        tokens.push({ type: 'name', value: name, column: start + 1, text: name });
        continue;
      }
      i++;
      const path: string[] = [];
      for (;;) {
        const keyStart = i;
        while (i < source.length && isKeyPart(source[i])) i++;
        if (i === keyStart) {
          const what = path.length === 0 ? `a path after '${name}:'` : `a key after '.'`;
          const found = i < source.length ? `'${source[i]}'` : 'end of expression';
          fail(`unexpected ${found} at column ${i + 1}: expected ${what}`, i);
        }
        path.push(source.slice(keyStart, i));
        if (source[i] !== '.') break;
        i++;
      }
      const text = source.slice(start, i);
      if (!(NAMESPACES as readonly string[]).includes(name)) {
        fail(
          `unknown namespace '${name}:' in '${text}' at column ${start + 1} (known: ${NAMESPACES.join(', ')})`,
          start,
        );
      }
      tokens.push({ type: 'reference', namespace: name as ConditionNamespace, path, column: start + 1, text });
      continue;
    }
    const two = source.slice(i, i + 2) as Punctuation;
    if (TWO_CHAR.includes(two)) {
      tokens.push({ type: 'punct', value: two, column: start + 1, text: two });
      i += 2;
      continue;
    }
    if ((ONE_CHAR as readonly string[]).includes(c)) {
      tokens.push({ type: 'punct', value: c as Punctuation, column: start + 1, text: c });
      i++;
      continue;
    }
    if (c === '=') fail(`unexpected '=' at column ${start + 1}: use '==' to compare`, start);
    if (c === '&' || c === '|')
      fail(`unexpected '${c}' at column ${start + 1}: use '${c}${c}' or '${c === '&' ? 'and' : 'or'}'`, start);
    fail(`unexpected character '${c}' at column ${start + 1}`, start);
  }
  tokens.push({ type: 'end', column: source.length + 1, text: '' });
  return tokens;
}
