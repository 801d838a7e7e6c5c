import type { PlanInstance } from '@granule/planner';
import { parse } from 'yaml';
import { renderGraph } from './graph.command';

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
