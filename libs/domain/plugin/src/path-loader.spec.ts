import { formatDiagnostic } from '@granule/core';
import { MemoryPluginFiles } from './memory-plugin-files';
import { LoadContext, deepMerge, resolvePathKeys } from './path-loader';

async function resolve(tree: unknown, files: Record<string, string>): Promise<{ data: unknown; errors: string[] }> {
  const ctx = new LoadContext(new MemoryPluginFiles(files, 'test'));
  const data = await resolvePathKeys(ctx, tree, { file: 'metadata.yaml', path: [], locate: () => undefined });
  return { data, errors: ctx.diagnostics.filter((d) => d.severity === 'error').map(formatDiagnostic) };
}

describe('resolvePathKeys (seed 003 loading rules)', () => {
  it('file - loads YAML, YML and JSON under the key without _path and removes the _path key', async () => {
    const out = await resolve(
      { a_path: 'a.yaml', b_path: 'b.yml', c_path: 'c.json', keep: 1 },
      { 'a.yaml': 'x: 1\n', 'b.yml': '- 2\n', 'c.json': '{"y": [3]}' },
    );
    expect(out).toEqual({ data: { a: { x: 1 }, b: [2], c: { y: [3] }, keep: 1 }, errors: [] });
  });

  it('folder - keeps the _path key and its value', async () => {
    const out = await resolve(
      { deployment_scripts_path: 'deployment_scripts/' },
      { 'deployment_scripts/deploy.sh': 'echo' },
    );
    expect(out).toEqual({ data: { deployment_scripts_path: 'deployment_scripts/' }, errors: [] });
  });

  it('glob of lists - concatenates every match in sorted path order', async () => {
    const out = await resolve(
      { tasks_path: 'graphs/*.yaml' },
      { 'graphs/b.yaml': '- id: b1\n- id: b2\n', 'graphs/a.yaml': '- id: a1\n', 'graphs/c.txt': 'ignored' },
    );
    expect(out).toEqual({ data: { tasks: [{ id: 'a1' }, { id: 'b1' }, { id: 'b2' }] }, errors: [] });
  });

  it('glob of mappings - merges them into one mapping, later files winning', async () => {
    const out = await resolve(
      { attributes_path: 'attrs/*.yaml' },
      { 'attrs/1.yaml': 'a: 1\nb: 1\n', 'attrs/2.yaml': 'b: 2\nc: 2\n' },
    );
    expect(out).toEqual({ data: { attributes: { a: 1, b: 2, c: 2 } }, errors: [] });
  });

  it('glob of mixed roots - an error naming the list files and the mapping files', async () => {
    const out = await resolve(
      { tasks_path: 'g/*.yaml' },
      { 'g/a.yaml': '- 1\n', 'g/b.yaml': 'x: 1\n', 'g/c.yaml': '- 2\n' },
    );
    expect(out.errors).toEqual([
      "metadata.yaml: tasks_path: the files matching 'g/*.yaml' must all hold a list or all hold a mapping; lists: g/a.yaml, g/c.yaml; mappings: g/b.yaml",
    ]);
    expect(out.data).toEqual({});
  });

  it('glob with no match - an error naming the pattern', async () => {
    const out = await resolve({ graphs: [{ type: 'default', tasks_path: 'nowhere/*.yaml' }] }, { 'x.yaml': '' });
    expect(out.errors).toEqual([
      "metadata.yaml: graphs[0].tasks_path: no data file matches the pattern 'nowhere/*.yaml'",
    ]);
  });

  it('missing file - an error naming the key path and the path', async () => {
    const out = await resolve({ releases: [{ networks_path: 'ubuntu/networks.yaml' }] }, {});
    expect(out.errors).toEqual(['metadata.yaml: releases[0].networks_path: ubuntu/networks.yaml does not exist']);
  });

  it('paths outside the plugin - refused', async () => {
    const out = await resolve({ a_path: '../secret.yaml', b_path: '/etc/passwd' }, {});
    expect(out.errors).toEqual([
      "metadata.yaml: a_path: ../secret.yaml must be a path inside the plugin (no leading '/', no '..' above the root)",
      "metadata.yaml: b_path: /etc/passwd must be a path inside the plugin (no leading '/', no '..' above the root)",
    ]);
  });

  it('nested _path - processed at any depth, also inside loaded files', async () => {
    const out = await resolve(
      {
        releases: [
          { graphs: [{ type: 'default', tasks_path: 'g/tasks.yaml' }], deep: { deeper: { x_path: 'x.yaml' } } },
        ],
      },
      {
        'g/tasks.yaml': '- id: t\n  parameters_path: g/params.yaml\n',
        'g/params.yaml': 'cmd: echo\n',
        'x.yaml': 'inner_path: y.json\n',
        'y.json': '[1, 2]',
      },
    );
    expect(out.errors).toEqual([]);
    expect(out.data).toEqual({
      releases: [
        {
          graphs: [{ type: 'default', tasks: [{ id: 't', parameters: { cmd: 'echo' } }] }],
          deep: { deeper: { x: { inner: [1, 2] } } },
        },
      ],
    });
  });

  it('a file that includes itself - an error naming the chain', async () => {
    const out = await resolve({ a_path: 'a.yaml' }, { 'a.yaml': 'b_path: b.yaml\n', 'b.yaml': 'a_path: a.yaml\n' });
    expect(out.errors).toEqual(['a.yaml: a.yaml includes itself through _path keys: a.yaml → b.yaml → a.yaml']);
  });
});

describe('deepMerge (base_release_path)', () => {
  it('merges mappings key by key; lists and scalars of the override replace the base', () => {
    const base = { name: 'base', attributes: { a: 1, nested: { x: 1, y: 1 } }, roles: ['a', 'b'] };
    const override = { attributes: { nested: { y: 2 }, b: 2 }, roles: ['c'] };
    expect(deepMerge(base, override)).toEqual({
      name: 'base',
      attributes: { a: 1, nested: { x: 1, y: 2 }, b: 2 },
      roles: ['c'],
    });
  });
});
