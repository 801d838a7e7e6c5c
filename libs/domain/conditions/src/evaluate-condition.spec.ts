import type { NodeSpec } from '@granule/task-model';
import {
  checkCondition,
  compileCondition,
  ConditionEvaluationError,
  evaluateCondition,
  referencesNode,
  type ConditionContext,
} from './index';

const controller: NodeSpec = { uid: '1', name: 'node-1', roles: ['primary-controller'], rack: 'r1' };
const osd: NodeSpec = { uid: '2', name: 'node-2', roles: ['compute', 'ceph-osd'], labels: { zone: 'a' } };
const zabbix: NodeSpec = { uid: '3', roles: ['zabbix-server'] };

function context(overrides: Partial<ConditionContext> = {}): ConditionContext {
  return {
    cluster: {
      status: 'operational',
      net_provider: 'neutron',
      settings: {
        common: { debug: { value: true }, verbose: { value: false } },
        storage: { volumes_ceph: { value: false }, backends: { value: ['ceph', 'lvm'] }, replicas: { value: 3 } },
        foo: { bar: { value: 'xyz-plugin' } },
        empty: { list: [], text: '', object: {}, zero: 0 },
      },
    },
    nodes: [controller, osd],
    clusterNodes: [controller, osd, zabbix],
    node: osd,
    release: { version: '2014.2-6.1', operating_system: 'Ubuntu' },
    ...overrides,
  };
}

const run = (source: string, ctx: ConditionContext = context()): boolean =>
  evaluateCondition(compileCondition(source), ctx);

function evaluationError(source: string, ctx: ConditionContext = context()): ConditionEvaluationError {
  const compiled = compileCondition(source);
  try {
    evaluateCondition(compiled, ctx);
  } catch (error) {
    if (error instanceof ConditionEvaluationError) return error;
    throw error;
  }
  throw new Error(`expected ${source} to fail at evaluation`);
}

describe('evaluateCondition - the seed examples', () => {
  it.each([
    ["api.cluster_status == 'operational'", true],
    ["api.role_in_deployment('ceph-osd')", true],
    ["api.role_in_cluster('zabbix-server')", true],
    ["api.cluster_status == 'new' and api.nodes_count() > 10", false],
    ["cluster:net_provider == 'neutron' and settings:common.debug.value", true],
    ['not (settings:storage.volumes_ceph.value == true)', true],
    ["'xyz' in settings:foo.bar.value", true],
    ["cluster:status != 'new' or null == settings:a.b", true],
  ])('%s -> %s', (source, expected) => {
    expect(run(source)).toBe(expected);
  });

  it("api.cluster_status == 'new' and api.nodes_count() > 10 holds for a new cluster of 11 nodes", () => {
    const nodes = Array.from({ length: 11 }, (_, i): NodeSpec => ({ uid: String(i), roles: ['compute'] }));
    const ctx = context({ cluster: { status: 'new', settings: {} }, nodes });
    expect(run("api.cluster_status == 'new' and api.nodes_count() > 10", ctx)).toBe(true);
    expect(
      run(
        "api.cluster_status == 'new' and api.nodes_count() > 10",
        context({ cluster: { status: 'new', settings: {} } }),
      ),
    ).toBe(false);
  });

  it('null == settings:a.b is true only while the path is missing', () => {
    const ctx = context({ cluster: { status: 'new', settings: { a: { b: 'set' } } } });
    expect(run("cluster:status != 'new' or null == settings:a.b", ctx)).toBe(false);
  });
});

describe('evaluateCondition - operators', () => {
  it.each([
    ['true and true', true],
    ['true and false', false],
    ['false or true', true],
    ['false or false', false],
    ['true && false', false],
    ['false || true', true],
    ['not true', false],
    ['!false', true],
    ['not null', true],
    ['1 == 1.0', true],
    ["'1' == 1", false],
    ['true == 1', false],
    ["'a' != 'b'", true],
    ['null == null', true],
    ['null != false', true],
    ['[1, [2, 3]] == [1, [2, 3]]', true],
    ['[1, 2] == [2, 1]', false],
    ['[1, 2] == [1, 2, 3]', false],
    ["settings:storage.backends.value == ['ceph', 'lvm']", true],
    ['settings:common.debug == settings:common.debug', true],
    ['settings:common.debug == settings:common.verbose', false],
    ['2 < 3', true],
    ['3 < 3', false],
    ['3 <= 3', true],
    ['4 > 3.5', true],
    ['3 >= 4', false],
    ['-2 < -1', true],
    ['-settings:storage.replicas.value == -3', true],
    ["'abc' < 'abd'", true],
    ["'b' >= 'a'", true],
    ["'ceph' in settings:storage.backends.value", true],
    ["'swift' in settings:storage.backends.value", false],
    ["'swift' not in settings:storage.backends.value", true],
    ['[1, 2] in [[1, 2], [3]]', true],
    ["'plug' in settings:foo.bar.value", true],
    ["'PLUG' in settings:foo.bar.value", false],
    ["'debug' in settings:common", true],
    ["'nope' in settings:common", false],
    ["'x' in settings:absent.list", false],
    ["'x' not in settings:absent.list", true],
    ["'' in ''", true],
  ])('%s -> %s', (source, expected) => {
    expect(run(source)).toBe(expected);
  });

  it('applies not before == (Fuel precedence): not 0 == false is (not 0) == false', () => {
    expect(run('not 0 == false')).toBe(false);
    expect(run('not (0 == false)')).toBe(true);
  });

  it('binds and tighter than or', () => {
    expect(run('true or true and false')).toBe(true);
    expect(run('(true or true) and false')).toBe(false);
  });

  it('short-circuits and: the right side is not evaluated when the left is false', () => {
    expect(run("false and 'a' > 1")).toBe(false);
    expect(() => run("true and 'a' > 1")).toThrow(ConditionEvaluationError);
  });

  it('short-circuits or: the right side is not evaluated when the left is true', () => {
    expect(run("true or 'a' > 1")).toBe(true);
    expect(() => run("false or 'a' > 1")).toThrow(ConditionEvaluationError);
  });
});

describe('evaluateCondition - truthiness of the result', () => {
  it.each([
    ['null', false],
    ['0', false],
    ['-0.0', false],
    ["''", false],
    ['[]', false],
    ['settings:empty.list', false],
    ['settings:empty.text', false],
    ['settings:empty.object', false],
    ['settings:empty.zero', false],
    ['settings:missing', false],
    ['1', true],
    ['-1', true],
    ["'no'", true],
    ['[false]', true],
    ['settings:common', true],
    ['settings:storage.backends.value', true],
  ])('%s -> %s', (source, expected) => {
    expect(run(source)).toBe(expected);
  });
});

describe('evaluateCondition - references', () => {
  it('cluster: reads the cluster, including status', () => {
    expect(run("cluster:status == 'operational'")).toBe(true);
    expect(run("cluster:net_provider == 'nova'")).toBe(false);
  });

  it('settings: reads cluster.settings by dotted path', () => {
    expect(run('settings:storage.replicas.value == 3')).toBe(true);
  });

  it('release: reads the release', () => {
    expect(run("release:operating_system == 'Ubuntu' and '6.1' in release:version")).toBe(true);
  });

  it('release: without a release in the context reads null', () => {
    expect(run('release:version == null', context({ release: undefined }))).toBe(true);
  });

  it('node: reads the node the task instance is for', () => {
    expect(run("'ceph-osd' in node:roles and node:labels.zone == 'a'")).toBe(true);
    expect(run("'ceph-osd' in node:roles", context({ node: controller }))).toBe(false);
    expect(run("node:rack == 'r1'", context({ node: controller }))).toBe(true);
  });

  it('node: without a node in the context reads null', () => {
    expect(run('node:uid == null', context({ node: undefined }))).toBe(true);
  });

  it('indexes lists by position', () => {
    expect(run("node:roles.1 == 'ceph-osd'")).toBe(true);
    expect(run('node:roles.5 == null')).toBe(true);
  });

  it('reads a missing path, or a path through a scalar, as null', () => {
    expect(run('settings:nope.deeper.still == null')).toBe(true);
    expect(run('settings:common.debug.value.more == null')).toBe(true);
    expect(run('cluster:status.length == null')).toBe(true);
  });

  it('treats an undefined value as null', () => {
    const ctx = context({ cluster: { status: 'new', settings: { a: undefined } } });
    expect(run('settings:a == null', ctx)).toBe(true);
  });
});

describe('evaluateCondition - paths cannot reach prototypes', () => {
  it.each([
    'settings:constructor',
    'settings:__proto__',
    'settings:toString',
    'settings:hasOwnProperty',
    'settings:constructor.prototype',
    'settings:__proto__.constructor.name',
    'cluster:constructor.name',
    'cluster:status.constructor',
    'node:roles.constructor',
    'node:roles.map',
    'release:__proto__',
    'settings:foo.bar.value.constructor',
  ])('%s reads null', (source) => {
    expect(run(`${source} == null`)).toBe(true);
  });

  it("'in' only finds own keys of an object", () => {
    expect(run("'constructor' in settings:common")).toBe(false);
    expect(run("'__proto__' in settings:common")).toBe(false);
    expect(run("'toString' in settings:common")).toBe(false);
  });

  it('still reads a key named constructor when the data really has one', () => {
    const settings = JSON.parse('{"constructor": {"value": "own"}, "__proto__": {"value": "own too"}}') as Record<
      string,
      unknown
    >;
    const ctx = context({ cluster: { status: 'new', settings } });
    expect(run("settings:constructor.value == 'own' and settings:__proto__.value == 'own too'", ctx)).toBe(true);
  });
});

describe('evaluateCondition - api', () => {
  it('api.cluster_status is the cluster status', () => {
    expect(run("api.cluster_status == 'new'", context({ cluster: { status: 'new', settings: {} } }))).toBe(true);
    expect(run("api.cluster_status == 'new'")).toBe(false);
  });

  it('api.role_in_deployment looks only at the deployment nodes', () => {
    expect(run("api.role_in_deployment('primary-controller')")).toBe(true);
    expect(run("api.role_in_deployment('zabbix-server')")).toBe(false);
  });

  it('api.role_in_cluster looks at every node of the cluster', () => {
    expect(run("api.role_in_cluster('zabbix-server')")).toBe(true);
    expect(run("api.role_in_cluster('mongo')")).toBe(false);
  });

  it('api.role_in_cluster falls back to cluster.nodes, then to the deployment nodes', () => {
    const fromCluster = context({ clusterNodes: undefined, cluster: { status: 'new', settings: {}, nodes: [zabbix] } });
    expect(run("api.role_in_cluster('zabbix-server')", fromCluster)).toBe(true);
    const fromDeployment = context({ clusterNodes: undefined });
    expect(run("api.role_in_cluster('zabbix-server')", fromDeployment)).toBe(false);
    expect(run("api.role_in_cluster('ceph-osd')", fromDeployment)).toBe(true);
  });

  it('api role functions accept any expression yielding a string', () => {
    expect(run('api.role_in_deployment(settings:foo.bar.value)')).toBe(false);
    const ctx = context({ cluster: { status: 'new', settings: { role: 'compute' } } });
    expect(run('api.role_in_deployment(settings:role)', ctx)).toBe(true);
  });

  it('api.nodes_count counts the deployment nodes', () => {
    expect(run('api.nodes_count() == 2')).toBe(true);
    expect(run('api.nodes_count()', context({ nodes: [] }))).toBe(false);
  });
});

describe('evaluateCondition - evaluation errors', () => {
  it.each([
    [
      'settings:foo.bar.value > 1',
      `cannot compare string "xyz-plugin" with number 1 using '>' at column 24: both sides must be numbers or both strings`,
    ],
    [
      'settings:missing <= 3',
      "cannot compare null with number 3 using '<=' at column 18: both sides must be numbers or both strings",
    ],
    [
      'true < false',
      "cannot compare boolean true with boolean false using '<' at column 6: both sides must be numbers or both strings",
    ],
    [
      'settings:storage.backends.value >= 1',
      "cannot compare a list with number 1 using '>=' at column 33: both sides must be numbers or both strings",
    ],
    ["1 in 'abc'", "'in' at column 3 needs a string on the left when the right is a string, found number 1"],
    ['null in settings:common', "'in' at column 6 needs a string on the left when the right is an object, found null"],
    ["'a' in 5", "'in' at column 5 needs a list, a string or an object on the right, found number 5"],
    ["'a' not in true", "'in' at column 5 needs a list, a string or an object on the right, found boolean true"],
    ['-cluster:status', `unary '-' at column 1 needs a number, found string "operational"`],
    ['api.role_in_deployment(1)', "'api.role_in_deployment' at column 1 expects a role name (string), found number 1"],
    [
      'true and api.role_in_cluster(settings:common)',
      "'api.role_in_cluster' at column 10 expects a role name (string), found an object",
    ],
  ])('%s', (source, message) => {
    const error = evaluationError(source);
    expect(error.message).toBe(message);
    expect(error.code).toBe('CONDITION_EVALUATION');
    expect(error.source).toBe(source);
  });

  it('shortens long strings in messages', () => {
    const ctx = context({ cluster: { status: 'x'.repeat(100), settings: {} } });
    expect(evaluationError('cluster:status > 1', ctx).message).toBe(
      `cannot compare string "${'x'.repeat(37)}..." with number 1 using '>' at column 16: both sides must be numbers or both strings`,
    );
  });
});

describe('compileCondition - reuse', () => {
  it('evaluates one compiled condition against different contexts', () => {
    const compiled = compileCondition("'ceph-osd' in node:roles");
    expect([controller, osd, zabbix].map((node) => evaluateCondition(compiled, context({ node })))).toEqual([
      false,
      true,
      false,
    ]);
    expect(compiled.source).toBe("'ceph-osd' in node:roles");
  });
});

describe('referencesNode', () => {
  it.each([
    ["'ceph-osd' in node:roles", true],
    ["true or node:rack == 'r1'", true],
    ['not (node:uid == null)', true],
    ['api.role_in_deployment(node:name)', true],
    ["[node:uid] == ['1']", true],
    ["api.cluster_status == 'operational'", false],
    ['settings:node.value and cluster:node', false],
    ["'node:roles' == 'x'", false],
  ])('%s -> %s', (source, expected) => {
    expect(referencesNode(compileCondition(source))).toBe(expected);
  });
});

describe('checkCondition', () => {
  it('returns null for a valid condition', () => {
    expect(checkCondition("api.role_in_cluster('zabbix-server')")).toBeNull();
  });

  it('returns an error diagnostic located by the caller', () => {
    expect(
      checkCondition("api.role_in_deploy('x')", {
        file: 'tasks.yaml',
        line: 7,
        taskId: 'zabbix-agent',
        path: '[2].condition',
      }),
    ).toEqual({
      severity: 'error',
      code: 'CONDITION_SYNTAX',
      message: `invalid condition "api.role_in_deploy('x')": unknown function 'api.role_in_deploy' at column 1 (known: role_in_deployment, role_in_cluster, nodes_count)`,
      file: 'tasks.yaml',
      line: 7,
      taskId: 'zabbix-agent',
      path: '[2].condition',
    });
  });
});
