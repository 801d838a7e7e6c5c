import { formatDiagnostic } from '@granule/core';
import { parseNodesFile } from './nodes-file';

const messages = (text: string): string[] => parseNodesFile(text, 'NODES.yaml').diagnostics.map(formatDiagnostic);

describe('parseNodesFile', () => {
  it('reads the nodes map form with every field', () => {
    const text = [
      'nodes:',
      '  - uid: 1',
      '    name: ctl01',
      '    roles: [controller]',
      '    tags: [control]',
      '    labels: {ucp_control_plane: enabled, tier: 1}',
      '    rack: rack03',
      '  - uid: "node-2"',
      '    roles: []',
    ].join('\n');
    expect(parseNodesFile(text, 'NODES.yaml')).toEqual({
      nodes: [
        {
          uid: '1',
          name: 'ctl01',
          roles: ['controller'],
          tags: ['control'],
          labels: { ucp_control_plane: 'enabled', tier: '1' },
          rack: 'rack03',
        },
        { uid: 'node-2', roles: [] },
      ],
      diagnostics: [],
    });
  });

  it('accepts a bare list and defaults roles to an empty list', () => {
    expect(parseNodesFile('- uid: a\n- uid: 7\n  roles: [compute]\n', 'n.yaml')).toEqual({
      nodes: [
        { uid: 'a', roles: [] },
        { uid: '7', roles: ['compute'] },
      ],
      diagnostics: [],
    });
  });

  it('duplicate uid - names both lines and drops the second entry', () => {
    const text = 'nodes:\n  - uid: 5\n    roles: []\n  - uid: "5"\n';
    const result = parseNodesFile(text, 'NODES.yaml');
    expect(result.nodes.map((n) => n.uid)).toEqual(['5']);
    expect(result.diagnostics.map(formatDiagnostic)).toEqual([
      "NODES.yaml:4: nodes[1].uid: duplicate uid '5' at line 4, first defined at line 2 (nodes[0])",
    ]);
    expect(result.diagnostics[0].code).toBe('NODES_DUPLICATE_UID');
  });

  it('reports every wrong field with its line, key path, expected and found', () => {
    const text = [
      'nodes:', //  1
      '  - name: no-uid', //  2
      '    roles: compute', //  3
      '  - uid: true', //  4
      '    roles: [ok, 5]', //  5
      '    tags: {a: b}', //  6
      '    labels: [x]', //  7
      '    rack: 3', //  8
      '    name: [a]', //  9
      '  - uid: c1', // 10
      '    labels: {k: [v]}', // 11
      '  - just-a-string', // 12
    ].join('\n');
    expect(messages(text)).toEqual([
      'NODES.yaml:2: nodes[0].uid: required, expected a string or number',
      'NODES.yaml:3: nodes[0].roles: expected a list of strings, got "compute"',
      'NODES.yaml:4: nodes[1].uid: expected a non-empty string or a number, got true',
      'NODES.yaml:9: nodes[1].name: expected a string, got a list',
      'NODES.yaml:5: nodes[1].roles[1]: expected a string, got 5',
      'NODES.yaml:6: nodes[1].tags: expected a list of strings, got a mapping',
      'NODES.yaml:7: nodes[1].labels: expected a mapping of label names to values, got a list',
      'NODES.yaml:8: nodes[1].rack: expected a string, got 3',
      'NODES.yaml:11: nodes[2].labels.k: expected a string, number or boolean label value, got a list',
      'NODES.yaml:12: nodes[3]: expected a mapping with uid and roles, got "just-a-string"',
    ]);
    expect(parseNodesFile(text, 'NODES.yaml').nodes).toEqual([]);
  });

  it('warns about unknown keys but keeps the node', () => {
    const result = parseNodesFile('- uid: a\n  ip: 10.0.0.1\n', 'n.yaml');
    expect(result.nodes).toEqual([{ uid: 'a', roles: [] }]);
    expect(result.diagnostics).toEqual([
      {
        severity: 'warning',
        code: 'NODES_UNKNOWN_KEY',
        message: "unknown key 'ip' (expected one of uid, name, roles, tags, labels, rack)",
        file: 'n.yaml',
        line: 2,
        path: '[0].ip',
      },
    ]);
  });

  it('rejects a document that is neither a list nor a map with nodes', () => {
    expect(messages('hosts: []\n')).toEqual([
      "NODES.yaml:1: expected a 'nodes' list (nodes: [{uid, roles}]) or a bare list of nodes, got a mapping with keys hosts",
    ]);
    expect(messages('nodes: 3\n')).toEqual(['NODES.yaml:1: nodes: expected a list of nodes, got 3']);
  });

  it('reports YAML syntax errors with their line', () => {
    const result = parseNodesFile('nodes:\n  - uid: a\n  - uid: [b\n', 'NODES.yaml');
    expect(result.nodes).toEqual([]);
    expect(result.diagnostics.length).toBeGreaterThan(0);
    expect(result.diagnostics[0]).toMatchObject({
      severity: 'error',
      code: 'NODES_YAML_SYNTAX',
      file: 'NODES.yaml',
      line: expect.any(Number),
    });
    expect(result.diagnostics[0].message).toMatch(/^YAML syntax error: /);
  });

  it('treats an empty nodes list as no nodes', () => {
    expect(parseNodesFile('nodes: []\n', 'n.yaml')).toEqual({ nodes: [], diagnostics: [] });
  });
});
