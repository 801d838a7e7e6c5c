import { IDENTIFIER_RULES, assertIdentifier, identifierProblem, isIdentifier, quoteFound } from './identifiers';

describe('identifier rules', () => {
  it('node uid - refuses NATS wildcards, dots and separators, with the rule in the message', () => {
    for (const bad of ['>', '*', 'web.1', 'a b', 'a/b', 'n@1', 'a:b', '-lead', '', 'x'.repeat(64)])
      expect(isIdentifier('nodeUid', bad)).toBe(false);
    for (const good of ['1', 'node-1', 'ctl_01', 'A', 'x'.repeat(63)]) expect(isIdentifier('nodeUid', good)).toBe(true);
    expect(identifierProblem('nodeUid', '>')).toBe(
      `expected a node uid of 1 to 63 letters, digits, '_' or '-', starting with a letter or digit, got ">"`,
    );
  });

  it('task id - allows generated legacy ids with dots, refuses references and list separators', () => {
    expect(isIdentifier('taskId', 'plugin-a.post_deployment.1')).toBe(true);
    expect(isIdentifier('taskId', '_private')).toBe(true);
    for (const bad of ['a@b', 'a/b', 'a,b', 'a b', '*', '', 7]) expect(isIdentifier('taskId', bad)).toBe(false);
  });

  it('names - environments allow dots, plugins do not; run ids start with a letter or digit', () => {
    expect(isIdentifier('environmentName', 'prod.eu-1')).toBe(true);
    expect(isIdentifier('pluginName', 'my.plugin')).toBe(false);
    expect(isIdentifier('runId', '20260101-120000-abcd')).toBe(true);
    expect(isIdentifier('runId', '-x')).toBe(false);
  });

  it('assertIdentifier - throws INVALID_INPUT with the path; returns the value when valid', () => {
    expect(assertIdentifier('nodeUid', 'n1')).toBe('n1');
    expect(() => assertIdentifier('nodeUid', '*', { path: 'uid' })).toThrow(
      expect.objectContaining({
        code: 'INVALID_INPUT',
        diagnostics: [expect.objectContaining({ code: 'INVALID_IDENTIFIER', path: 'uid' })],
      }),
    );
  });

  it('quoteFound - escapes control characters and cuts long values, never echoing raw bytes', () => {
    expect(quoteFound('a\u0000b\u001b[2J')).toBe('"a\\u0000b\\u001b[2J"');
    expect(quoteFound('x'.repeat(1000))).toBe(`"${'x'.repeat(80)}…" (1000 characters)`);
    expect(quoteFound({})).toBe('a mapping');
  });

  it('every rule is anchored at both ends', () => {
    for (const r of Object.values(IDENTIFIER_RULES)) expect(r.pattern.source).toMatch(/^\^.*\$$/);
  });
});
