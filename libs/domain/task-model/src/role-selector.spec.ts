import { compileRoleSelector, matchesNode, matchesTaskName, parseRoleSelector, selectsMaster } from './role-selector';
import { TaskFieldError } from './task-diagnostics';
import { NodeSpec, RoleSelector } from './types';

const controller: NodeSpec = { uid: '1', roles: ['primary-controller'] };
const compute: NodeSpec = { uid: '2', roles: ['compute'], tags: ['nova-compute'] };
const ceph: NodeSpec = { uid: '3', roles: ['ceph-osd', 'compute'] };
const master: NodeSpec = { uid: 'master', roles: [] };
const nodes = [controller, compute, ceph, master];

const selected = (value: unknown): string[] => {
  const selector = parseRoleSelector(value);
  return selector ? nodes.filter((n) => matchesNode(selector, n)).map((n) => n.uid) : [];
};

describe('parseRoleSelector', () => {
  it.each([
    ['*', { kind: 'all' }],
    ['master', { kind: 'master' }],
    [['master'], { kind: 'master' }],
    ['compute', { kind: 'patterns', patterns: [{ kind: 'name', name: 'compute' }] }],
    ['/^ceph-.*/', { kind: 'patterns', patterns: [{ kind: 'regex', source: '^ceph-.*' }] }],
    [
      ['controller', '/comp.*/', 'controller'],
      {
        kind: 'patterns',
        patterns: [
          { kind: 'name', name: 'controller' },
          { kind: 'regex', source: 'comp.*' },
        ],
      },
    ],
    [['compute', '*'], { kind: 'all' }],
    [['*', 'master'], { kind: 'all', withMaster: true }],
    [
      ['master', 'compute'],
      {
        kind: 'patterns',
        patterns: [
          { kind: 'name', name: 'compute' },
          { kind: 'name', name: 'master' },
        ],
      },
    ],
    [[], null],
    [null, null],
  ])('%p - reads as %p', (value, expected) => {
    expect(parseRoleSelector(value)).toEqual(expected);
  });

  it('invalid regex - TASK_BAD_ROLE_PATTERN naming the regex and the JS error', () => {
    expect(() => parseRoleSelector(['ok', '/ab(/'])).toThrow(
      new TaskFieldError(
        'TASK_BAD_ROLE_PATTERN',
        "role pattern '/ab(/' is not a valid regex: Invalid regular expression: /ab(/: Unterminated group",
      ),
    );
  });

  it('non-string item - TASK_BAD_FIELD', () => {
    expect(() => parseRoleSelector(['ok', 3])).toThrow("expected a role name, '*', 'master' or a /regex/, got 3");
  });
});

describe('matchesNode', () => {
  it('* - selects every node of the deployment, never the master host (Fuel test_role_resolver.py, test_resolve_all)', () => {
    expect(selected('*')).toEqual(['1', '2', '3']);
  });

  it('master - selects only the node with uid master', () => {
    expect(selected('master')).toEqual(['master']);
  });

  it('role name - selects nodes with that role', () => {
    expect(selected(['compute'])).toEqual(['2', '3']);
  });

  it('tag - a name matches node tags too', () => {
    expect(selected('nova-compute')).toEqual(['2']);
  });

  it('regex - anchored at the start like Python re.match, not at the end', () => {
    expect(selected('/controller/')).toEqual([]);
    expect(selected('/primary/')).toEqual(['1']);
    expect(selected('/.*controller$/')).toEqual(['1']);
  });

  it('regex with alternation - the anchor applies to every branch', () => {
    expect(selected('/ceph|primary/')).toEqual(['1', '3']);
  });

  it('master inside a list - selects the master and the listed roles', () => {
    expect(selected(['master', 'ceph-osd'])).toEqual(['3', 'master']);
  });

  it('regex does not select the master through its uid', () => {
    expect(selected('/.*/')).toEqual(['1', '2', '3']);
  });

  it('compiled predicate is cached per selector object', () => {
    const selector: RoleSelector = { kind: 'patterns', patterns: [{ kind: 'regex', source: 'c.*' }] };
    expect(compileRoleSelector(selector)).toBe(compileRoleSelector(selector));
    expect(compileRoleSelector({ ...selector })).not.toBe(compileRoleSelector(selector));
  });
});

describe('matchesTaskName', () => {
  it('exact name - equal ids only', () => {
    expect(matchesTaskName({ name: 'netconfig', isRegex: false }, 'netconfig')).toBe(true);
    expect(matchesTaskName({ name: 'netconfig', isRegex: false }, 'netconfig2')).toBe(false);
  });

  it('regex name - anchored at the start', () => {
    expect(matchesTaskName({ name: 'openstack-.*', isRegex: true }, 'openstack-controller')).toBe(true);
    expect(matchesTaskName({ name: 'openstack-.*', isRegex: true }, 'primary-openstack-controller')).toBe(false);
  });
});

describe("Fuel's role resolution (fuel-web nailgun/utils/resolvers.py; test_role_resolver.py)", () => {
  // Five cluster nodes with one or two roles each, and the master host, which is no cluster node.
  const fleet: NodeSpec[] = [
    { uid: 'n1', roles: ['primary-controller'] },
    { uid: 'n2', roles: ['cinder'] },
    { uid: 'n3', roles: ['controller', 'compute'] },
    { uid: 'n4', roles: ['controller', 'cinder'] },
    { uid: 'n5', roles: ['compute'] },
    { uid: 'master', roles: [] },
  ];
  const resolve = (value: unknown): string[] => {
    const selector = parseRoleSelector(value);
    return selector ? fleet.filter((n) => matchesNode(selector, n)).map((n) => n.uid) : [];
  };

  it("test_resolve_all - '*' resolves to every cluster node and not to the master host", () => {
    expect(resolve('*')).toEqual(['n1', 'n2', 'n3', 'n4', 'n5']);
  });

  it('test_resolve_master - master alone resolves to the master host; inside a list, to the master host too', () => {
    expect(resolve('master')).toEqual(['master']);
    expect(resolve(['master', 'controller'])).toEqual(['n3', 'n4', 'master']);
  });

  it('test_resolve_by_pattern - a regex matches roles from their start', () => {
    expect(resolve(['/.*controller/'])).toEqual(['n1', 'n3', 'n4']);
    expect(resolve(['/c.+/'])).toEqual(['n2', 'n3', 'n4', 'n5']);
  });

  it('selectsMaster - true exactly when the planner must add the master host', () => {
    expect(
      ['master', ['master', 'controller'], ['*', 'master'], '*', ['controller'], '/.*/'].map((v) =>
        selectsMaster(parseRoleSelector(v)),
      ),
    ).toEqual([true, true, true, false, false, false]);
  });
});
