import { LineCounter } from 'yaml';
import { formatDiagnostic } from '@granule/core';
import { parseNodesFile } from './nodes-file';
import { parseTaskFile } from './task-file-parser';
import { readYaml } from './yaml-limits';

/** A billion-laughs document: each line's anchor repeats the previous one 9 times. */
export function aliasBomb(levels = 7): string {
  const lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]'];
  for (let i = 1; i < levels; i++)
    lines.push(
      `a${i}: &a${i} [${Array(9)
        .fill(`*a${i - 1}`)
        .join(',')}]`,
    );
  return `${lines.join('\n')}\n`;
}

const read = (text: string, bounds = {}) =>
  readYaml(text, 'f.yaml', { syntaxCode: 'X_YAML_SYNTAX', lineCounter: new LineCounter(), ...bounds });
const rendered = (text: string, bounds = {}) => read(text, bounds).diagnostics.map(formatDiagnostic);

describe('readYaml - hostile YAML is a user error with the file and line', () => {
  it('an alias bomb - names the line where the expansion explodes, before any data is built', () => {
    const r = read(aliasBomb());
    expect(r.values).toEqual([]);
    expect(r.diagnostics).toEqual([
      expect.objectContaining({ code: 'YAML_TOO_MANY_ALIASES', file: 'f.yaml', line: 7, severity: 'error' }),
    ]);
    expect(r.diagnostics[0].message).toBe(
      'aliases here expand the document to 6,053,451 nodes; the bound is 1,000,000 (an alias bomb?)',
    );
  });

  it('ordinary anchors and merge keys - read as before', () => {
    const r = readYaml('base: &b {x: 1}\nuse:\n  <<: *b\n  y: 2\nlist: [*b, *b]\n', 'f.yaml', {
      syntaxCode: 'X',
      lineCounter: new LineCounter(),
      merge: true,
    });
    expect(r.diagnostics).toEqual([]);
    expect(r.values[0]).toEqual({ base: { x: 1 }, use: { x: 1, y: 2 }, list: [{ x: 1 }, { x: 1 }] });
  });

  it('50,000 nested flow lists - INPUT_TOO_DEEP, no stack overflow', () => {
    const r = read(`a: ${'['.repeat(50_000)}${']'.repeat(50_000)}\n`);
    expect(r.diagnostics.map((d) => d.code)).toContain('INPUT_TOO_DEEP');
    expect(r.diagnostics.every((d) => d.file === 'f.yaml')).toBe(true);
  });

  it('block nesting past the bound - the line of the first level too deep', () => {
    const text = Array.from({ length: 70 }, (_, i) => `${' '.repeat(i)}k:`).join('\n') + ' 1\n';
    expect(rendered(text)).toEqual([
      'f.yaml:65: nested deeper than 64 levels (mappings and lists inside each other), the bound',
    ]);
  });

  it('depth reached through aliases counts too, at the alias that pulls the deep data in', () => {
    const text = `deep: &d {a: {a: {a: 1}}}\nuse: {b: {b: *d}}\n`;
    expect(rendered(text, { maxDepth: 4 })).toEqual([
      'f.yaml:2: nested deeper than 4 levels (mappings and lists inside each other), the bound',
    ]);
  });

  it('a binary file - refused by line, its bytes are not in the message', () => {
    const d = read('ok: 1\n\u007fELF\u0002\u0001\u0000\u0000junk');
    expect(d.diagnostics).toEqual([expect.objectContaining({ code: 'INPUT_NOT_TEXT', line: 2 })]);
    expect(d.diagnostics[0].message).not.toContain('ELF');
  });

  it('a __proto__ key - refused with its line', () => {
    expect(rendered('a: 1\nb:\n  __proto__:\n    polluted: yes\n')).toEqual([
      "f.yaml:3: the keys '__proto__', 'constructor' and 'prototype' are not allowed",
    ]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('two documents where one is expected - a syntax error naming the second', () => {
    expect(rendered('a: 1\n---\nb: 2\n')).toEqual([
      "f.yaml:2: YAML syntax error: expected one document, found 2 (a '---' line starts another)",
    ]);
  });
});

describe('task and node files - hostile YAML reaches the caller as diagnostics', () => {
  it('an alias bomb in a tasks file - TASK diagnostics with file and line, no tasks, no throw', () => {
    const r = parseTaskFile(aliasBomb(), 'release/tasks.yaml');
    expect(r.tasks).toEqual([]);
    expect(r.diagnostics.map(formatDiagnostic)).toEqual([
      'release/tasks.yaml:7: aliases here expand the document to 6,053,451 nodes; the bound is 1,000,000 (an alias bomb?)',
    ]);
  });

  it('an alias bomb in a nodes file - the same diagnostic', () => {
    expect(parseNodesFile(aliasBomb(), 'nodes.yaml').diagnostics.map((d) => [d.code, d.line])).toEqual([
      ['YAML_TOO_MANY_ALIASES', 7],
    ]);
  });

  it('node uids > and * - refused with the rule, like the config-store and the agent', () => {
    const r = parseNodesFile(
      "nodes:\n  - {uid: '>', roles: [a]}\n  - {uid: '*', roles: [a]}\n  - {uid: web.1}\n",
      'n.yaml',
    );
    expect(r.nodes).toEqual([]);
    expect(r.diagnostics.map(formatDiagnostic)).toEqual([
      `n.yaml:2: nodes[0].uid: expected a node uid of 1 to 63 letters, digits, '_' or '-', starting with a letter or digit, got ">"`,
      `n.yaml:3: nodes[1].uid: expected a node uid of 1 to 63 letters, digits, '_' or '-', starting with a letter or digit, got "*"`,
      `n.yaml:4: nodes[2].uid: expected a node uid of 1 to 63 letters, digits, '_' or '-', starting with a letter or digit, got "web.1"`,
    ]);
  });

  it('a task id with @ or a space - refused with the rule', () => {
    const r = parseTaskFile("- id: 'a@b'\n  type: skipped\n", 'd/deployment_tasks.yaml');
    expect(r.diagnostics.map(formatDiagnostic)).toEqual([
      `d/deployment_tasks.yaml:1: [0].id: expected a task id of 1 to 128 letters, digits, '_', '.', ':' or '-', starting with a letter, digit or '_', got "a@b"`,
    ]);
  });

  it('a tasks.yaml record without an id - says the id is missing', () => {
    const r = parseTaskFile('- type: shell\n  roles: [controller]\n  parameters: {cmd: "true"}\n', 'p/tasks.yaml');
    expect(r.diagnostics.map(formatDiagnostic)).toEqual([
      "p/tasks.yaml:1: [0]: task has no 'id' and no 'stage': give it an id (a granular task), or a stage such as 'post_deployment/100' (a legacy tasks.yaml task)",
    ]);
  });
});
