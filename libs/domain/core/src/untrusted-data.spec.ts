import { INPUT_LIMITS, formatBytes, jsonBytes, utf8Bytes } from './input-limits';
import { jsonTextDepth, parseJsonText } from './json-text';
import { decodeTextFile, textProblem } from './text-input';
import { inspectData, setDottedPath, untrustedDataProblems } from './untrusted-data';

const nested = (depth: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
};

describe('untrusted data', () => {
  it('inspectData - measures 50,000 levels without recursion and names the first path past the bound', () => {
    const shape = inspectData(nested(50_000), 3);
    expect(shape.tooDeepAt).toBe('a.a.a');
    expect(inspectData(nested(3)).depth).toBe(3);
  });

  it('untrustedDataProblems - finds __proto__, constructor and prototype keys at any depth', () => {
    const payload = JSON.parse('{"settings": {"x": [{"__proto__": {"polluted": 1}}]}}');
    expect(untrustedDataProblems(payload)).toEqual([
      expect.objectContaining({ code: 'INPUT_FORBIDDEN_KEY', path: 'settings.x[0].__proto__' }),
    ]);
    expect(untrustedDataProblems({ labels: { constructor: 'x' } })[0].path).toBe('labels.constructor');
  });

  it('setDottedPath - refuses a prototype path and never touches Object.prototype', () => {
    const target: Record<string, unknown> = {};
    expect(setDottedPath(target, '__proto__.polluted', 'yes')).toBe('__proto__');
    expect(setDottedPath(target, 'a.constructor.prototype.x', 1)).toBe('constructor');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(setDottedPath(target, 'a.b', 1)).toBeUndefined();
    expect(target).toEqual({ a: { b: 1 } });
  });

  it('sizes - counts UTF-8 bytes and renders bounds', () => {
    expect(utf8Bytes('aé€😀')).toBe(1 + 2 + 3 + 4);
    expect(jsonBytes({ a: 'é' })).toBe(10);
    expect(formatBytes(INPUT_LIMITS.labelsJsonBytes)).toBe('16 KiB');
    expect(formatBytes(15 * 1024 * 1024)).toBe('15 MiB');
  });
});

describe('text and JSON input', () => {
  it('textProblem - a NUL byte is a binary file, named by line; the bytes are not in the message', () => {
    const d = textProblem('a: 1\nb: \u0000\u0001ELF', 'x.yaml');
    expect(d).toMatchObject({ code: 'INPUT_NOT_TEXT', file: 'x.yaml', line: 2 });
    expect(d?.message).not.toContain('ELF');
    expect(d?.message).not.toContain('\u0000');
  });

  it('decodeTextFile - UTF-16 and invalid UTF-8 are named; a UTF-8 BOM is dropped', () => {
    expect(decodeTextFile(new Uint8Array([0xff, 0xfe, 0x61, 0]), 'f')).toMatchObject({
      problem: { message: expect.stringContaining('UTF-16') },
    });
    expect(decodeTextFile(new Uint8Array([0x61, 0x0a, 0xc3, 0x28]), 'f')).toMatchObject({
      problem: { line: 2, message: expect.stringContaining('not valid UTF-8') },
    });
    expect(decodeTextFile(new Uint8Array([0xef, 0xbb, 0xbf, 0x61]), 'f')).toEqual({ text: 'a' });
  });

  it('parseJsonText - 50,000 levels is refused before JSON.parse; a syntax error never echoes the text', () => {
    const deep = '['.repeat(50_000) + ']'.repeat(50_000);
    expect(jsonTextDepth(deep).at).toBe(INPUT_LIMITS.nestingDepth);
    expect(parseJsonText(deep, 'body')).toMatchObject({ problem: { code: 'INPUT_TOO_DEEP' } });
    expect(parseJsonText('["[[[[", {"a": "{{{{"}]', 'body')).toEqual({ value: ['[[[[', { a: '{{{{' }] });
    const broken = parseJsonText('{"secret": x}', 'body');
    expect(broken).toMatchObject({ problem: { code: 'INPUT_NOT_JSON', message: 'not valid JSON (a syntax error)' } });
    expect(JSON.stringify(broken)).not.toContain('secret');
  });
});
