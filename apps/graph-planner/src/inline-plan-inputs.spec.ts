import { InvalidInputError } from '@granule/core';
import { assertNoErrors, parseTaskFile } from '@granule/task-model';
import { isNormalisedTaskRecord, planRequestFromInline } from './inline-plan-inputs';

const TASKS_YAML = `
- id: a
  type: shell
  roles: [controller]
  parameters: {cmd: a.sh}
- id: b
  type: shell
  roles: [controller]
  requires: [a]
  parameters: {cmd: b.sh}
`;
const parsed = assertNoErrors(parseTaskFile(TASKS_YAML, 'tasks/deployment_tasks.yaml'));
const normalised = JSON.parse(JSON.stringify(parsed)) as unknown[];
const raw = [
  { id: 'a', type: 'shell', roles: ['controller'], parameters: { cmd: 'a.sh' } },
  { id: 'b', type: 'shell', roles: ['controller'], requires: ['a'], parameters: { cmd: 'b.sh' } },
];
const nodes = [{ uid: 'n1', roles: ['controller'] }];

function problems(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof InvalidInputError) return err.message;
    throw err;
  }
  throw new Error('expected InvalidInputError');
}

describe('planRequestFromInline', () => {
  it('normalised task definitions are used as they are (file and line kept for messages)', () => {
    const { request } = planRequestFromInline({ graphs: { default: normalised }, nodes }, 'default');
    expect(request.tasks).toEqual(parsed.map((t) => ({ ...t, source: { ...t.source, layer: 'release' } })));
    expect(request.tasks[1].source).toEqual({
      file: 'tasks/deployment_tasks.yaml',
      line: 6,
      index: 1,
      layer: 'release',
    });
    expect(request.nodes).toEqual([{ uid: 'n1', roles: ['controller'] }]);
  });

  it('raw Fuel records are parsed into the same tasks', () => {
    const { request } = planRequestFromInline(
      { graphs: { default: raw } as Record<string, unknown[]>, nodes },
      'default',
      { skip: ['a'] },
    );
    expect(request.tasks.map((t) => [t.id, t.requires, t.parameters])).toEqual([
      ['a', [], { cmd: 'a.sh' }],
      ['b', ['a'], { cmd: 'b.sh' }],
    ]);
    expect(request.tasks[0].source.file).toBe('inline.graphs.default');
    expect(request.filters).toEqual({ skip: ['a'] });
  });

  it('detects a normalised record by requiredFor or source', () => {
    expect(
      [normalised[0], raw[0], { id: 'x', requiredFor: [] }, { id: 'x', required_for: [] }, 'a'].map(
        isNormalisedTaskRecord,
      ),
    ).toEqual([true, false, true, false, false]);
  });

  it('unknown graph - names the graphs there are, sorted', () => {
    expect(
      problems(() => planRequestFromInline({ graphs: { provisioning: [], default: [] }, nodes }, 'deletion')),
    ).toBe('graph deletion: the tasks define no such graph (available: default, provisioning)');
  });

  it('reports every problem at once: a bad record, a bad node, a bad cluster field', () => {
    const message = problems(() =>
      planRequestFromInline(
        {
          graphs: { default: [{ id: 'a', type: 'shel', roles: ['controller'] }] },
          nodes: [{ uid: 'n1', roles: 'controller' }],
          cluster: { status: 3 },
        },
        'default',
      ),
    );
    const lines = message.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^inline\.graphs\.default: \[0\]\.type: .*shel/);
    expect(lines[1]).toBe('inline.nodes: [0].roles: expected a list of strings, got "controller"');
    expect(lines[2]).toBe('inline.cluster: status: expected a string such as new or operational, got 3');
  });

  it('a normalised record missing fields is refused field by field', () => {
    const broken = { ...(normalised[0] as Record<string, unknown>), crossDepends: undefined, failOnError: 'yes' };
    expect(problems(() => planRequestFromInline({ graphs: { default: [broken] }, nodes }, 'default'))).toBe(
      [
        "inline.graphs.default: [0].crossDepends: task 'a': expected a list in a normalised task definition, got nothing",
        'inline.graphs.default: [0].failOnError: task \'a\': expected true or false in a normalised task definition, got "yes"',
      ].join('\n'),
    );
  });

  it('mixing normalised and raw records in one graph is refused', () => {
    expect(
      problems(() => planRequestFromInline({ graphs: { default: [normalised[0], raw[1]] }, nodes }, 'default')),
    ).toBe(
      'inline.graphs.default: mixes 1 normalised task definitions (with requiredFor/source) and 1 Fuel records; send one kind per graph',
    );
  });

  it('cluster tasks override the default graph, as --cluster does', () => {
    const { request } = planRequestFromInline(
      {
        graphs: { default: raw },
        nodes,
        cluster: {
          status: 'operational',
          settings: { a: 1 },
          tasks: [{ id: 'b', type: 'shell', roles: ['controller'], parameters: { cmd: 'other.sh' } }],
        },
      },
      'default',
    );
    expect(request.tasks.map((t) => [t.id, t.parameters, t.source.layer])).toEqual([
      ['a', { cmd: 'a.sh' }, 'release'],
      ['b', { cmd: 'other.sh' }, 'cluster'],
    ]);
    expect(request.cluster).toMatchObject({ status: 'operational', settings: { a: 1 } });
  });

  it("the identifier rules - node uids '>' and '*' and a normalised task id with '@' are refused with the rule", () => {
    const bad = [{ ...(normalised[0] as object), id: 'a@n1' }];
    expect(
      problems(() =>
        planRequestFromInline({ graphs: { default: bad }, nodes: [{ uid: '>', roles: ['controller'] }] }, 'default'),
      ).split('\n'),
    ).toEqual([
      `inline.graphs.default: [0].id: task 'a@n1': expected a task id (1 to 128 letters, digits, '_', '.', ':' or '-', starting with a letter, digit or '_') in a normalised task definition, got "a@n1"`,
      `inline.nodes: [0].uid: expected a node uid of 1 to 63 letters, digits, '_' or '-', starting with a letter or digit, got ">"`,
    ]);
  });
});
