import type { PlanInstance } from '@granule/planner';
import { parse } from 'yaml';
import type { RunGraphReply, RunGraphRequest } from '@granule/contracts';
import { graphWriter, renderGraph, writeGraphPages } from './graph.command';

const inst = (task: string, node: string, requires: string[] = []): PlanInstance => ({
  task,
  node,
  type: 'shell',
  stage: 'deployment',
  priority: requires.length,
  requires,
  parameters: {},
  skipped: false,
});
const instances = [
  inst('deploy_start', 'sync'),
  inst('a', 'n1', ['deploy_start@sync']),
  inst('b', 'n1', ['a@n1']),
  inst('b', 'n2', ['deploy_start@sync']),
];

describe('renderGraph', () => {
  it('json - sealed values and values under secret names show as ***', () => {
    const secret = {
      ...inst('a', 'n1'),
      parameters: { cmd: 'x', env: { DB_PASSWORD: { $sealed: 'Xabc.box' }, HOST: 'h' }, api_token: 'clear' },
    };
    const shown = JSON.parse(renderGraph('json', { instances: [secret], statuses: { 'a@n1': 'succeeded' } }));
    expect(shown[0].parameters).toEqual({ cmd: 'x', env: { DB_PASSWORD: '***', HOST: 'h' }, api_token: '***' });
  });

  it('colours a run graph by outcome in dot', () => {
    const dot = renderGraph('dot', {
      instances,
      statuses: { 'a@n1': 'succeeded', 'b@n1': 'failed', 'b@n2': 'dep_failed', 'deploy_start@sync': 'succeeded' },
    });
    expect(dot).toContain('"a@n1" [label="a", color=darkgreen, fontcolor=darkgreen];');
    expect(dot).toContain('"b@n1" [label="b", color=red, fontcolor=red];');
    expect(dot).toContain('"b@n2" [label="b", color=orange, fontcolor=orange];');
    expect(dot).toContain('"deploy_start@sync" [label="deploy_start", shape=ellipse];');
    expect(dot).toContain('"a@n1" -> "b@n1";');
  });

  it('classes mermaid nodes by outcome and keeps edges', () => {
    const mermaid = renderGraph('mermaid', { instances, statuses: { 'a@n1': 'succeeded', 'b@n1': 'running' } }).split(
      '\n',
    );
    expect(mermaid).toContain('  i1["a@n1"]:::succeeded');
    expect(mermaid).toContain('  i2["b@n1"]:::running');
    expect(mermaid).toContain('  i1 --> i2');
  });

  it('adds the status to each entry in json', () => {
    const json = JSON.parse(renderGraph('json', { instances, statuses: { 'a@n1': 'succeeded' } })) as (PlanInstance & {
      status?: string;
    })[];
    expect(json.map((i) => i.status)).toEqual([undefined, 'succeeded', undefined, undefined]);
  });

  it('yaml - the same entries as json, secrets masked', () => {
    const secret = { ...inst('a', 'n1'), parameters: { cmd: 'x', api_token: 'clear' } };
    const graph = { instances: [...instances, secret], statuses: { 'a@n1': 'succeeded' } };
    expect(parse(renderGraph('yaml', graph))).toEqual(JSON.parse(renderGraph('json', graph)));
    expect(renderGraph('yaml', graph)).not.toContain('clear');
  });
});

describe('graphWriter and writeGraphPages - a graph read page by page', () => {
  const statuses = { 'a@n1': 'succeeded', 'b@n1': 'running', 'deploy_start@sync': 'succeeded' };
  /** `instances` served `size` at a time, as runs.graph pages them (cursor = the next index). */
  const pager = (all: PlanInstance[], size: number, asked: (string | undefined)[] = []) => {
    return async (q: RunGraphRequest): Promise<RunGraphReply> => {
      asked.push(q.cursor);
      const from = q.cursor === undefined ? 0 : Number(q.cursor);
      const page = all.slice(from, from + size);
      const end = from + size >= all.length;
      return { instances: page, statuses, ...(end ? { total: all.length } : { next: String(from + size) }) };
    };
  };
  const paged = async (format: 'dot' | 'mermaid' | 'json' | 'yaml', all: PlanInstance[], size: number) => {
    let out = '';
    const pages = await writeGraphPages(pager(all, size), { runId: 'r' }, graphWriter(format), async (t) => {
      out += t;
    });
    return { out, pages };
  };

  it('follows next until a page has none, asking with each cursor; the last page ends it', async () => {
    const asked: (string | undefined)[] = [];
    const pages = await writeGraphPages(
      pager(instances, 3, asked),
      { runId: 'r' },
      graphWriter('json'),
      async () => undefined,
    );
    expect(pages).toBe(2);
    expect(asked).toEqual([undefined, '3']);
  });

  it.each(['json', 'yaml'] as const)('%s - pages of one entry write what one page of all writes', async (format) => {
    expect((await paged(format, instances, 1)).out).toBe(renderGraph(format, { instances, statuses }));
  });

  it.each(['dot', 'mermaid'] as const)(
    '%s - pages of one entry write the lines one page of all writes',
    async (format) => {
      const lines = (text: string) => [...new Set(text.split('\n'))].sort();
      expect(lines((await paged(format, instances, 1)).out)).toEqual(
        lines(renderGraph(format, { instances, statuses })),
      );
    },
  );

  it('json and yaml - many pages are one valid document with every entry and its status', async () => {
    const many = Array.from({ length: 25 }, (_, k) =>
      inst(`t${k}`, `n${k % 4}`, k ? [`t${k - 1}@n${(k - 1) % 4}`] : []),
    );
    const json = JSON.parse((await paged('json', many, 7)).out) as { task: string; status?: string }[];
    expect(json.map((e) => e.task)).toEqual(many.map((i) => i.task));
    expect(parse((await paged('yaml', many, 7)).out)).toEqual(json);
  });

  it('dot - a node whose entries span pages stays one cluster (the same cluster name)', async () => {
    const { out } = await paged('dot', instances, 2); // n1's a and b come on pages 1 and 2
    const clusters = [...out.matchAll(/subgraph (cluster_\d+) \{\n {4}label="([^"]+)"/g)].map((m) => `${m[1]}=${m[2]}`);
    expect(clusters).toEqual(['cluster_0=sync', 'cluster_1=n1', 'cluster_1=n1', 'cluster_2=n2']);
    expect(out.startsWith('digraph plan {\n')).toBe(true);
    expect(out.endsWith('\n}\n')).toBe(true);
  });

  it('mermaid - a prerequisite named before its entry comes keeps one id', async () => {
    const later = [inst('b', 'n1', ['a@n1']), inst('a', 'n1')];
    const lines = (await paged('mermaid', later, 1)).out.split('\n');
    expect(lines).toContain('  i0["b@n1"]:::running');
    expect(lines).toContain('  i1 --> i0');
    expect(lines).toContain('  i1["a@n1"]:::succeeded');
  });

  it('an empty graph is an empty document in every format', async () => {
    const empty = async (format: 'dot' | 'mermaid' | 'json' | 'yaml') => (await paged(format, [], 10)).out;
    expect(JSON.parse(await empty('json'))).toEqual([]);
    expect(parse(await empty('yaml'))).toEqual([]);
    expect(await empty('dot')).toBe('digraph plan {\n  rankdir=LR;\n  node [shape=box, fontsize=10];\n}\n');
    expect((await empty('mermaid')).startsWith('flowchart LR\n  classDef skipped')).toBe(true);
  });

  it('a first page that fails writes nothing at all (no header of an empty graph)', async () => {
    const written: string[] = [];
    const ask = async (): Promise<RunGraphReply> => {
      throw new Error('run nope does not exist');
    };
    for (const format of ['dot', 'mermaid', 'json', 'yaml'] as const)
      await expect(
        writeGraphPages(ask, { runId: 'nope' }, graphWriter(format), async (t) => void written.push(t)),
      ).rejects.toThrow('run nope does not exist');
    expect(written).toEqual([]);
  });

  it('a page that fails stops the reading with its error', async () => {
    const ask = async (q: RunGraphRequest): Promise<RunGraphReply> => {
      if (q.cursor) throw new Error('cursor: expected a page cursor');
      return { instances: [instances[0]], next: 'bad' };
    };
    await expect(writeGraphPages(ask, { runId: 'r' }, graphWriter('dot'), async () => undefined)).rejects.toThrow(
      'cursor: expected a page cursor',
    );
  });
});
