import { Diagnostic, InvalidInputError, formatDiagnostic } from '@granule/core';
import {
  ParseResult,
  assertNoErrors,
  mergeParseResults,
  parseDeploymentTasks,
  parseLegacyTasks,
  parseNodeRoles,
  parseTaskData,
  parseTaskFile,
  parseTaskRecords,
} from './task-file-parser';
import { TaskDefinition } from './types';

const FILE = 'release/deployment_tasks.yaml';
const errors = (r: ParseResult): string[] => r.diagnostics.filter((d) => d.severity === 'error').map(formatDiagnostic);
const warnings = (r: ParseResult): string[] =>
  r.diagnostics.filter((d) => d.severity === 'warning').map(formatDiagnostic);
const byId = (r: ParseResult, id: string): TaskDefinition => {
  const task = r.tasks.find((t) => t.id === id);
  if (!task)
    throw new Error(
      `no task ${id}; got ${r.tasks.map((t) => t.id).join(', ')}; ${r.diagnostics.map(formatDiagnostic).join('\n')}`,
    );
  return task;
};
const yaml = (lines: string[]): string => lines.join('\n') + '\n';

describe('deployment_tasks.yaml', () => {
  it('a full 2.0.0 task - every field normalised', () => {
    const r = parseTaskFile(
      yaml([
        '- id: netconfig',
        '  type: puppet',
        '  version: 2.0.0',
        '  roles: [primary-controller, /^compute.*/]',
        '  requires: hiera',
        '  required_for: [deploy_end]',
        '  cross-depends:',
        '    - name: globals',
        '      role: self',
        '    - name: /^ceph-.*/',
        "      role: '*'",
        '      policy: any',
        '  cross-depended-by:',
        '    - name: openstack-controller',
        '      role: [controller]',
        '  condition: "settings:network.value == \'neutron\'"',
        '  fail_on_error: false',
        '  parameters:',
        '    puppet_manifest: /etc/puppet/netconfig.pp',
        '    puppet_modules: /etc/puppet/modules',
        '    timeout: 3600',
        '    strategy: {type: parallel, amount: 6}',
      ]),
      FILE,
      { plugin: 'net-plugin' },
    );
    expect(r.diagnostics).toEqual([]);
    expect(r.tasks).toEqual([
      {
        id: 'netconfig',
        type: 'puppet',
        version: '2.0.0',
        roles: {
          kind: 'patterns',
          patterns: [
            { kind: 'name', name: 'primary-controller' },
            { kind: 'regex', source: '^compute.*' },
          ],
        },
        requires: ['hiera'],
        requiredFor: ['deploy_end'],
        crossDepends: [
          { name: 'globals', isRegex: false, role: { kind: 'self' }, policy: 'all' },
          { name: '^ceph-.*', isRegex: true, role: { kind: 'all' }, policy: 'any' },
        ],
        crossDependedBy: [
          {
            name: 'openstack-controller',
            isRegex: false,
            role: { kind: 'patterns', patterns: [{ kind: 'name', name: 'controller' }] },
            policy: 'all',
          },
        ],
        condition: "settings:network.value == 'neutron'",
        parameters: {
          puppet_manifest: '/etc/puppet/netconfig.pp',
          puppet_modules: '/etc/puppet/modules',
          timeout: 3600,
        },
        strategy: { type: 'parallel', amount: 6 },
        failOnError: false,
        source: { file: FILE, line: 1, index: 0, plugin: 'net-plugin' },
      },
    ]);
  });

  it('a minimal 1.0.0 task - defaults: version 1.0.0, no roles, empty lists, fail_on_error true', () => {
    const r = parseTaskFile(yaml(['- id: deploy_end', '  type: stage']), FILE);
    expect(r.tasks).toEqual([
      {
        id: 'deploy_end',
        type: 'stage',
        version: '1.0.0',
        roles: null,
        requires: [],
        requiredFor: [],
        crossDepends: [],
        crossDependedBy: [],
        parameters: {},
        failOnError: true,
        source: { file: FILE, line: 1, index: 0 },
      },
    ]);
  });

  it('role, roles, groups and tags - the selector is their union', () => {
    const r = parseTaskFile(
      yaml(['- id: t', '  type: reboot', '  role: [a]', '  roles: b', '  groups: [/c.*/, a]', '  tags: [d]']),
      FILE,
    );
    expect(byId(r, 't').roles).toEqual({
      kind: 'patterns',
      patterns: [
        { kind: 'name', name: 'a' },
        { kind: 'name', name: 'b' },
        { kind: 'regex', source: 'c.*' },
        { kind: 'name', name: 'd' },
      ],
    });
  });

  it.each([
    ["'*'", { kind: 'all' }],
    ['master', { kind: 'master' }],
    ['/^ceph/', { kind: 'patterns', patterns: [{ kind: 'regex', source: '^ceph' }] }],
    ['compute', { kind: 'patterns', patterns: [{ kind: 'name', name: 'compute' }] }],
    ['[]', null],
  ])('role: %s - reads as %p', (value, expected) => {
    const r = parseTaskFile(yaml(['- id: t', '  type: reboot', `  role: ${value}`]), FILE);
    expect(byId(r, 't').roles).toEqual(expected);
  });

  it('stage tasks - roles are null and a role list is a warning', () => {
    const r = parseTaskFile(yaml(['- id: s', '  type: stage', "  role: ['*']"]), FILE);
    expect(byId(r, 's').roles).toBeNull();
    expect(warnings(r)).toEqual([`${FILE}:3: [0].role: task 's': stage tasks run on no node; role ignored`]);
  });

  it('type rsync - read as sync', () => {
    const r = parseTaskFile(
      yaml(['- id: r', '  type: rsync', "  role: '*'", '  parameters: {src: /a, dst: /b}']),
      FILE,
    );
    expect(byId(r, 'r').type).toBe('sync');
  });

  it('cross-depends without role - waits on any node; single-string requires/required_for are one-item lists', () => {
    const r = parseTaskFile(
      yaml(['- id: t', '  type: skipped', '  required_for: deploy_end', '  cross-depends: [{name: x}]']),
      FILE,
    );
    expect(byId(r, 't').crossDepends).toEqual([{ name: 'x', isRegex: false, role: { kind: 'any' }, policy: 'all' }]);
    expect(byId(r, 't').requiredFor).toEqual(['deploy_end']);
  });

  it('cross-depends with role [] - selects no node, unlike an omitted role', () => {
    const r = parseTaskFile(
      yaml(['- id: t', '  type: skipped', '  cross-depends: [{name: x, role: []}, {name: y, role: master}]']),
      FILE,
    );
    expect(byId(r, 't').crossDepends.map((d) => d.role)).toEqual([
      { kind: 'patterns', patterns: [] },
      { kind: 'master' },
    ]);
  });

  it('top-level strategy - used, and removed nowhere else', () => {
    const r = parseTaskFile(
      yaml(['- id: g', '  type: group', '  role: [compute]', '  strategy: {type: one_by_one}']),
      FILE,
    );
    expect(byId(r, 'g').strategy).toEqual({ type: 'one_by_one' });
    expect(byId(r, 'g').parameters).toEqual({});
  });

  it('strategy in parameters and at top level - parameters wins, with a warning', () => {
    const r = parseTaskFile(
      yaml([
        '- id: g',
        '  type: group',
        '  strategy: {type: one_by_one}',
        '  parameters:',
        '    strategy: {type: parallel}',
      ]),
      FILE,
    );
    expect(byId(r, 'g').strategy).toEqual({ type: 'parallel' });
    expect(warnings(r)).toEqual([
      `${FILE}:3: [0].strategy: task 'g': strategy is set twice; parameters.strategy is used`,
    ]);
  });

  it('group fields - fault_tolerance, tasks', () => {
    const r = parseTaskFile(
      yaml([
        '- id: compute',
        '  type: group',
        '  role: [compute]',
        "  fault_tolerance: '-10%'",
        '  tasks: [netconfig, hiera]',
      ]),
      FILE,
    );
    expect(byId(r, 'compute').faultTolerance).toEqual({ kind: 'percent', value: 10, mustSucceed: true });
    expect(byId(r, 'compute').tasks).toEqual(['netconfig', 'hiera']);
  });

  it('fault_tolerance and tasks on a non-group task - ignored with warnings', () => {
    const r = parseTaskFile(yaml(['- id: t', '  type: reboot', '  fault_tolerance: 2', '  tasks: [a]']), FILE);
    expect(byId(r, 't').faultTolerance).toBeUndefined();
    expect(byId(r, 't').tasks).toBeUndefined();
    expect(warnings(r)).toEqual([
      `${FILE}:3: [0].fault_tolerance: task 't': fault_tolerance is only used by group tasks; ignored for a reboot task`,
      `${FILE}:4: [0].tasks: task 't': tasks is only used by group tasks; ignored for a reboot task`,
    ]);
  });

  it('puppet_manifests - read as puppet_manifest with a warning', () => {
    const r = parseTaskFile(
      yaml(['- id: p', '  type: puppet', '  parameters:', '    puppet_manifests: site.pp']),
      FILE,
    );
    expect(byId(r, 'p').parameters).toEqual({ puppet_manifest: 'site.pp' });
    expect(warnings(r)).toEqual([
      `${FILE}:4: [0].parameters.puppet_manifests: task 'p': parameters.puppet_manifests is read as puppet_manifest; rename it`,
    ]);
  });

  it('unknown field - warning with a did-you-mean; Fuel keys Granule does not use are silent', () => {
    const r = parseTaskFile(
      yaml(['- id: t', '  type: reboot', '  require: [x]', '  reexecute_on: [deploy_changes]', '  colour: red']),
      FILE,
    );
    expect(byId(r, 't').requires).toEqual([]);
    expect(warnings(r)).toEqual([
      `${FILE}:3: [0].require: task 't': unknown field 'require' is ignored (did you mean 'requires'?)`,
      `${FILE}:5: [0].colour: task 't': unknown field 'colour' is ignored`,
    ]);
  });

  it('copy_files - files with permissions as string or number', () => {
    const r = parseTaskFile(
      yaml([
        '- id: c',
        '  type: copy_files',
        "  role: '*'",
        '  parameters:',
        '    files:',
        "      - {src: /a, dst: /b, permissions: '0644'}",
        '      - {src: /c, dst: /d, permissions: 0o600}',
      ]),
      FILE,
    );
    expect(byId(r, 'c').parameters.files).toEqual([
      { src: '/a', dst: '/b', permissions: '0644' },
      { src: '/c', dst: '/d', permissions: 0o600 },
    ]);
  });
});

describe('required parameters', () => {
  it.each([
    ['shell', ['cmd']],
    ['puppet', ['puppet_manifest']],
    ['sync', ['src', 'dst']],
    ['rsync', ['src', 'dst']],
    ['upload_file', ['path', 'data']],
    ['copy_files', ['files']],
  ])('%s without parameters - one error per missing parameter', (type, missing) => {
    const r = parseTaskFile(
      yaml(['- id: ok', '  type: reboot', '- id: t', `  type: ${type}`, '  parameters: {}']),
      FILE,
    );
    const shown = type === 'rsync' ? 'sync' : type;
    expect(errors(r)).toEqual(
      missing.map((p) => `${FILE}:5: [1].parameters.${p}: task 't': a ${shown} task needs parameters.${p}`),
    );
    expect(r.tasks.map((t) => t.id)).toEqual(['ok']);
  });

  it('reboot, group, stage, skipped - need no parameters', () => {
    const r = parseTaskFile(
      yaml(['- {id: a, type: reboot}', '- {id: b, type: group}', '- {id: c, type: stage}', '- {id: d, type: skipped}']),
      FILE,
    );
    expect(r.diagnostics).toEqual([]);
    expect(r.tasks.map((t) => t.type)).toEqual(['reboot', 'group', 'stage', 'skipped']);
  });
});

describe('errors', () => {
  it('a wrong parameter type - names file, line, key path, task, expected and found', () => {
    const r = parseTaskFile(
      yaml([
        '- {id: a, type: reboot}',
        '- {id: b, type: reboot}',
        '- {id: c, type: reboot}',
        '- id: d',
        '  type: shell',
        '  parameters:',
        '    cmd: ./x.sh',
        '    timeout: ten',
        '    retries: -1',
        '    interval: 5',
        '    cwd: 7',
      ]),
      FILE,
    );
    expect(r.diagnostics).toEqual<Diagnostic[]>([
      {
        severity: 'error',
        code: 'TASK_BAD_FIELD',
        message: 'expected a number, got "ten"',
        file: FILE,
        line: 8,
        path: '[3].parameters.timeout',
        taskId: 'd',
      },
      {
        severity: 'error',
        code: 'TASK_BAD_FIELD',
        message: 'expected a number, got -1',
        file: FILE,
        line: 9,
        path: '[3].parameters.retries',
        taskId: 'd',
      },
      {
        severity: 'error',
        code: 'TASK_BAD_FIELD',
        message: 'expected a string, got 7',
        file: FILE,
        line: 11,
        path: '[3].parameters.cwd',
        taskId: 'd',
      },
    ]);
    expect(r.tasks.map((t) => t.id)).toEqual(['a', 'b', 'c']);
  });

  it('unknown type - TASK_UNKNOWN_TYPE listing the valid types', () => {
    const r = parseTaskFile(yaml(['- id: t', '  type: puppett']), FILE);
    expect(r.diagnostics).toEqual([
      {
        severity: 'error',
        code: 'TASK_UNKNOWN_TYPE',
        message:
          'unknown task type "puppett": expected one of stage, group, skipped, puppet, shell, upload_file, sync, copy_files, reboot (rsync = sync)',
        file: FILE,
        line: 2,
        path: '[0].type',
        taskId: 't',
      },
    ]);
  });

  it('missing id and type - TASK_MISSING_FIELD for each', () => {
    const r = parseTaskFile(yaml(['- {id: ok, type: reboot}', '- role: [a]', '  requires: [ok]']), FILE);
    expect(errors(r)).toEqual([
      `${FILE}:2: [1]: task has no 'id'`,
      `${FILE}:2: [1]: task has no 'type' (one of stage, group, skipped, puppet, shell, upload_file, sync, copy_files, reboot)`,
    ]);
    expect(r.diagnostics.map((d) => d.code)).toEqual(['TASK_MISSING_FIELD', 'TASK_MISSING_FIELD']);
  });

  it('bad role regex - TASK_BAD_ROLE_PATTERN naming the regex and the JS error', () => {
    const r = parseTaskFile(yaml(['- id: t', '  type: reboot', "  roles: [controller, '/ab(/']"]), FILE);
    expect(r.diagnostics).toEqual([
      {
        severity: 'error',
        code: 'TASK_BAD_ROLE_PATTERN',
        message: "role pattern '/ab(/' is not a valid regex: Invalid regular expression: /ab(/: Unterminated group",
        file: FILE,
        line: 3,
        path: '[0].roles[1]',
        taskId: 't',
      },
    ]);
  });

  it('bad cross-depends - name regex, role, policy and shape each reported', () => {
    const r = parseTaskFile(
      yaml([
        '- id: t',
        '  type: reboot',
        '  cross-depends:',
        '    - name: /x(/',
        '    - name: y',
        '      role: [3]',
        '      policy: some',
        '    - z',
        '  cross-depended-by: x',
      ]),
      FILE,
    );
    expect(errors(r)).toEqual([
      `${FILE}:4: [0].cross-depends[0].name: task 't': task name pattern '/x(/' is not a valid regex: Invalid regular expression: /x(/: Unterminated group`,
      `${FILE}:6: [0].cross-depends[1].role[0]: task 't': expected a role name, '*', 'master' or a /regex/, got 3`,
      `${FILE}:7: [0].cross-depends[1].policy: task 't': expected all or any, got "some"`,
      `${FILE}:8: [0].cross-depends[2]: task 't': expected {name, role?, policy?}, got "z"`,
      `${FILE}:9: [0].cross-depended-by: task 't': expected a list of {name, role?, policy?}, got "x"`,
    ]);
    expect(r.diagnostics.map((d) => d.code)).toEqual([
      'TASK_BAD_NAME_PATTERN',
      'TASK_BAD_FIELD',
      'TASK_BAD_FIELD',
      'TASK_BAD_FIELD',
      'TASK_BAD_FIELD',
    ]);
  });

  it('condition - yaql_exp is unsupported, a non-string is a wrong type', () => {
    const r = parseTaskFile(
      yaml([
        '- id: a',
        '  type: reboot',
        "  condition: {yaql_exp: 'changed($.x)'}",
        '- id: b',
        '  type: reboot',
        '  condition: true',
      ]),
      FILE,
    );
    expect(r.diagnostics.map((d) => [d.code, formatDiagnostic(d)])).toEqual([
      [
        'TASK_UNSUPPORTED',
        `${FILE}:3: [0].condition: task 'a': yaql_exp conditions are not supported; write the condition as an expression string, e.g. condition: "settings:storage.ceph.value == true"`,
      ],
      ['TASK_BAD_FIELD', `${FILE}:6: [1].condition: task 'b': expected an expression string, got true`],
    ]);
  });

  it('bad strategy - type and amount checked', () => {
    const r = parseTaskFile(
      yaml([
        '- id: a',
        '  type: group',
        '  parameters:',
        '    strategy: {type: parallel, amount: 0}',
        '- id: b',
        '  type: group',
        '  strategy: {type: serial}',
        '- id: c',
        '  type: group',
        '  strategy: one_by_one',
      ]),
      FILE,
    );
    expect(errors(r)).toEqual([
      `${FILE}:4: [0].parameters.strategy.amount: task 'a': expected a positive integer, got 0`,
      `${FILE}:7: [1].strategy.type: task 'b': expected parallel or one_by_one, got "serial"`,
      `${FILE}:10: [2].strategy: task 'c': expected {type: parallel, amount?} or {type: one_by_one}, got "one_by_one"`,
    ]);
  });

  it('other wrong field types - version, fail_on_error, requires item, parameters, fault_tolerance, id', () => {
    const r = parseTaskFile(
      yaml([
        '- id: a',
        '  type: group',
        '  version: 2.0',
        "  fail_on_error: 'no'",
        '  requires: [x, 5]',
        "  fault_tolerance: 'many'",
        '- id: b',
        '  type: reboot',
        '  parameters: [1]',
        '- id: 7',
        '  type: reboot',
      ]),
      FILE,
    );
    expect(errors(r)).toEqual([
      `${FILE}:3: [0].version: task 'a': expected a version like '2.0.0', got 2`,
      `${FILE}:5: [0].requires[1]: task 'a': expected a task id, got 5`,
      `${FILE}:6: [0].fault_tolerance: task 'a': expected a node count like 2, a percent like '10%', or a negative one like -2 or '-10%' (that many must succeed), got "many"`,
      `${FILE}:4: [0].fail_on_error: task 'a': expected true or false, got "no"`,
      `${FILE}:9: [1].parameters: task 'b': expected a mapping, got a list`,
      `${FILE}:10: [2].id: expected a task id of 1 to 128 letters, digits, '_', '.', ':' or '-', starting with a letter, digit or '_', got 7`,
    ]);
  });

  it('copy_files - empty files list and bad entries', () => {
    const r = parseTaskFile(
      yaml([
        '- id: a',
        '  type: copy_files',
        '  parameters: {files: []}',
        '- id: b',
        '  type: copy_files',
        '  parameters:',
        '    files:',
        "      - {src: /a, permissions: '999'}",
        '      - 3',
      ]),
      FILE,
    );
    expect(errors(r)).toEqual([
      `${FILE}:3: [0].parameters.files: task 'a': expected a non-empty list of {src, dst, permissions?}, got an empty list`,
      `${FILE}:8: [1].parameters.files[0].dst: task 'b': each file needs dst`,
      `${FILE}:8: [1].parameters.files[0].permissions: task 'b': expected a mode like '0644', got "999"`,
      `${FILE}:9: [1].parameters.files[1]: task 'b': expected {src, dst, permissions?}, got 3`,
    ]);
  });

  it('yaql_exp in a typed parameter - unsupported', () => {
    const r = parseTaskFile(
      yaml(['- id: u', '  type: upload_file', '  parameters:', '    path: /etc/x', '    data: {yaql_exp: $.x}']),
      FILE,
    );
    expect(r.diagnostics.map((d) => [d.code, d.message])).toEqual([
      ['TASK_UNSUPPORTED', 'yaql_exp values are not supported; write data as a string'],
    ]);
  });

  it('bad stage postfix - TASK_BAD_STAGE with the right form', () => {
    const r = parseTaskFile(
      yaml([
        '- id: a',
        '  type: reboot',
        "  stage: 'post_deployment:: 50'",
        '- id: b',
        '  type: reboot',
        '  stage: post_deployment/x',
      ]),
      FILE,
    );
    expect(r.diagnostics.map((d) => [d.code, formatDiagnostic(d)])).toEqual([
      [
        'TASK_BAD_STAGE',
        `${FILE}:3: [0].stage: task 'a': stage 'post_deployment:: 50' is not valid: write it as 'post_deployment/50'`,
      ],
      [
        'TASK_BAD_STAGE',
        `${FILE}:6: [1].stage: task 'b': stage 'post_deployment/x' is not valid: the postfix after '/' must be a number, e.g. 'post_deployment/50'`,
      ],
    ]);
  });

  it.each([
    ['stage: post_deployment:: 50', "stage 'post_deployment:: 50' is not valid: write it as 'post_deployment/50'"],
    ['stage: post_deployment: :50', "stage 'post_deployment: :50' is not valid: write it as 'post_deployment/50'"],
  ])('unquoted `%s` - a YAML error whose message shows the right stage form', (line, hint) => {
    const r = parseTaskFile(
      yaml(['- role: [controller]', '  type: shell', `  ${line}`, '  parameters: {cmd: x}']),
      'plugin/tasks.yaml',
    );
    expect(r.tasks).toEqual([]);
    expect(r.diagnostics).toEqual([
      {
        severity: 'error',
        code: 'TASK_YAML_SYNTAX',
        message: `YAML syntax error: Nested mappings are not allowed in compact mappings; ${hint}`,
        file: 'plugin/tasks.yaml',
        line: 3,
      },
    ]);
  });

  it('YAML syntax error elsewhere - file and line, no stage hint', () => {
    const r = parseTaskFile(yaml(['- id: a', '  type: reboot', '- id: b', '  type: [reboot']), FILE);
    expect(r.tasks).toEqual([]);
    expect(r.diagnostics.map((d) => [d.code, d.file, d.line])).toEqual([['TASK_YAML_SYNTAX', FILE, 5]]);
    expect(r.diagnostics[0].message).toMatch(/^YAML syntax error: [^;]+$/);
  });

  it('duplicate ids in one file - error on the later one naming both lines; the first is kept', () => {
    const r = parseTaskFile(
      yaml([
        '- id: a',
        '  type: reboot',
        '- id: b',
        '  type: reboot',
        '- id: a',
        '  type: shell',
        '  parameters: {cmd: x}',
      ]),
      FILE,
    );
    expect(r.tasks.map((t) => [t.id, t.type])).toEqual([
      ['a', 'reboot'],
      ['b', 'reboot'],
    ]);
    expect(r.diagnostics).toEqual([
      {
        severity: 'error',
        code: 'TASK_DUPLICATE_ID',
        message: `task id 'a' is defined twice: ${FILE}:1 and ${FILE}:5`,
        file: FILE,
        line: 5,
        taskId: 'a',
      },
    ]);
  });

  it('duplicate of a task that has errors - still reported', () => {
    const r = parseTaskFile(yaml(['- id: a', '  type: nope', '- id: a', '  type: reboot']), FILE);
    expect(errors(r)).toEqual([
      `${FILE}:2: [0].type: task 'a': unknown task type "nope": expected one of stage, group, skipped, puppet, shell, upload_file, sync, copy_files, reboot (rsync = sync)`,
      `${FILE}:3: task id 'a' is defined twice: ${FILE}:1 and ${FILE}:3`,
    ]);
    expect(r.tasks).toEqual([]);
  });

  it('a list item that is not a mapping - TASK_BAD_RECORD, the rest still parsed', () => {
    const r = parseTaskFile(yaml(['- just a string', '- {id: a, type: reboot}']), FILE);
    expect(errors(r)).toEqual([`${FILE}:1: [0]: expected a task (a mapping with id, type, ...), got "just a string"`]);
    expect(r.tasks.map((t) => t.id)).toEqual(['a']);
  });
});

describe('file shapes', () => {
  it.each([[''], ['# nothing here\n'], ['~\n'], ['[]\n']])('%p - no tasks, no diagnostics', (text) => {
    expect(parseTaskFile(text, FILE)).toEqual({ tasks: [], diagnostics: [] });
  });

  it('a single task without the leading dash - TASK_FILE_SHAPE with the fix', () => {
    const r = parseTaskFile(yaml(['id: a', 'type: reboot']), FILE);
    expect(r.diagnostics).toEqual([
      {
        severity: 'error',
        code: 'TASK_FILE_SHAPE',
        message: "expected a list of tasks: start each task with '- ' (e.g. '- id: a')",
        file: FILE,
        line: 1,
      },
    ]);
  });

  it('a scalar document - TASK_FILE_SHAPE', () => {
    expect(errors(parseTaskFile('42\n', FILE))).toEqual([
      `${FILE}:1: expected a list of tasks or a mapping of node roles, got 42`,
    ]);
  });
});

describe('legacy tasks.yaml', () => {
  const legacy = yaml([
    "- role: ['primary-controller', 'controller']",
    '  stage: post_deployment/100',
    '  type: shell',
    '  parameters:',
    '    cmd: ./deploy.sh',
    '    timeout: 42',
    "- role: '*'",
    '  stage: pre_deployment',
    '  type: puppet',
    '  parameters: {puppet_manifest: site.pp, puppet_modules: modules}',
  ]);

  it('seed 000 plugin task - id <plugin>.<stage>.<n>, stage priority, generatedId', () => {
    const r = parseTaskFile(legacy, 'plugins/plugin-a/tasks.yaml', { plugin: 'plugin-a' });
    expect(r.diagnostics).toEqual([]);
    expect(r.tasks[0]).toEqual({
      id: 'plugin-a.post_deployment.1',
      type: 'shell',
      version: '1.0.0',
      roles: {
        kind: 'patterns',
        patterns: [
          { kind: 'name', name: 'primary-controller' },
          { kind: 'name', name: 'controller' },
        ],
      },
      requires: [],
      requiredFor: [],
      crossDepends: [],
      crossDependedBy: [],
      parameters: { cmd: './deploy.sh', timeout: 42 },
      stage: { name: 'post_deployment', priority: 100, raw: 'post_deployment/100' },
      failOnError: true,
      generatedId: true,
      source: { file: 'plugins/plugin-a/tasks.yaml', line: 1, index: 0, plugin: 'plugin-a' },
    });
    expect(r.tasks[1].id).toBe('plugin-a.pre_deployment.2');
  });

  it('scope - options.scope, else the parent directory, else "legacy"', () => {
    expect(parseTaskFile(legacy, 'x/tasks.yaml', { scope: 'release-9' }).tasks.map((t) => t.id)).toEqual([
      'release-9.post_deployment.1',
      'release-9.pre_deployment.2',
    ]);
    expect(parseTaskFile(legacy, '/opt/plugins/zabbix/tasks.yaml').tasks[0].id).toBe('zabbix.post_deployment.1');
    expect(parseTaskFile(legacy, 'tasks.yaml').tasks[0].id).toBe('legacy.post_deployment.1');
  });

  it('detected from content - no ids, stage/role present, any file name', () => {
    expect(parseTaskFile(legacy, 'p/old-style.yaml').tasks.map((t) => t.id)).toEqual([
      'p.post_deployment.1',
      'p.pre_deployment.2',
    ]);
  });

  it('parseLegacyTasks - forced even when the file name says otherwise', () => {
    expect(parseLegacyTasks(legacy, 'p/deployment_tasks.yaml').tasks[0].generatedId).toBe(true);
  });

  it('a tasks.yaml record without id or stage - says the id is missing too; n still counts it', () => {
    const r = parseTaskFile(
      yaml(["- role: '*'", '  type: reboot', "- role: '*'", '  type: reboot', '  stage: post_deployment']),
      'p/tasks.yaml',
    );
    expect(r.diagnostics.map((d) => [d.code, formatDiagnostic(d)])).toEqual([
      [
        'TASK_MISSING_FIELD',
        "p/tasks.yaml:1: [0]: task has no 'id' and no 'stage': give it an id (a granular task), or a stage such as 'post_deployment/100' (a legacy tasks.yaml task)",
      ],
    ]);
    expect(r.tasks.map((t) => t.id)).toEqual(['p.post_deployment.2']);
  });

  it('an explicit id in tasks.yaml - kept, not generated', () => {
    const r = parseTaskFile(
      yaml(['- id: mine', "  role: '*'", '  stage: pre_deployment', '  type: reboot']),
      'p/tasks.yaml',
    );
    expect(r.tasks.map((t) => [t.id, t.generatedId])).toEqual([['mine', undefined]]);
  });

  it('a list with ids and another file name - deployment tasks, so a missing id is an error', () => {
    const r = parseTaskFile(
      yaml(['- {id: a, type: reboot}', "- {role: '*', stage: pre_deployment, type: reboot}"]),
      'p/more.yaml',
    );
    expect(errors(r)).toEqual([`p/more.yaml:2: [1]: task has no 'id'`]);
  });
});

describe('node_roles.yaml', () => {
  const roles = yaml([
    'controller:',
    '  name: Controller',
    '  description: The controller',
    '  tasks: [hiera, globals, netconfig]',
    '  fault_tolerance: 1',
    '  parameters:',
    '    strategy: {type: parallel, amount: 2}',
    'mongo:',
    '  name: Mongo',
    'zabbix:',
    '  tasks: []',
  ]);

  it('seed 001 - each role with tasks becomes a group task with id and roles = the role name', () => {
    const r = parseTaskFile(roles, 'plugins/p/node_roles.yaml', { plugin: 'p' });
    expect(r.diagnostics).toEqual([]);
    expect(r.tasks).toEqual([
      {
        id: 'controller',
        type: 'group',
        version: '2.0.0',
        roles: { kind: 'patterns', patterns: [{ kind: 'name', name: 'controller' }] },
        requires: [],
        requiredFor: [],
        crossDepends: [],
        crossDependedBy: [],
        parameters: {},
        strategy: { type: 'parallel', amount: 2 },
        faultTolerance: { kind: 'count', value: 1, mustSucceed: false },
        tasks: ['hiera', 'globals', 'netconfig'],
        failOnError: true,
        source: { file: 'plugins/p/node_roles.yaml', line: 1, index: 0, plugin: 'p' },
      },
    ]);
  });

  it('a single node role file - same unwrapping', () => {
    const r = parseNodeRoles(yaml(['storage:', '  tasks: [disks]']), 'roles/storage.yaml');
    expect(r.tasks.map((t) => [t.id, t.type, t.tasks])).toEqual([['storage', 'group', ['disks']]]);
  });

  it('bad entries - a non-id task member and a role that is not a mapping, with key paths and lines', () => {
    const r = parseTaskFile(yaml(['ok:', '  tasks: [a]', 'bad:', '  tasks: [a, 1]', 'worse: 3']), 'node_roles.yaml');
    // `worse: 3` makes the file not a mapping of mappings; forcing the format reports per role.
    expect(errors(r)).toEqual([
      'node_roles.yaml:1: expected a list of tasks or a mapping of node roles, got a mapping',
    ]);
    const forced = parseNodeRoles(
      yaml(['ok:', '  tasks: [a]', 'bad:', '  tasks: [a, 1]', 'worse: 3']),
      'node_roles.yaml',
    );
    expect(errors(forced)).toEqual([
      "node_roles.yaml:4: bad.tasks[1]: task 'bad': expected a task id, got 1",
      "node_roles.yaml:5: worse: task 'worse': expected a node role mapping, got 3",
    ]);
    expect(forced.tasks.map((t) => t.id)).toEqual(['ok']);
  });
});

describe('already-loaded data', () => {
  it('parseTaskRecords - no locator: no line in diagnostics, source.line 0', () => {
    const r = parseTaskRecords(
      [
        { id: 'a', type: 'reboot' },
        { id: 'b', type: 'shell' },
      ],
      'merged',
    );
    expect(r.tasks.map((t) => t.source)).toEqual([{ file: 'merged', line: 0, index: 0 }]);
    expect(r.diagnostics).toEqual([
      {
        severity: 'error',
        code: 'TASK_MISSING_PARAMETER',
        message: 'a shell task needs parameters.cmd',
        file: 'merged',
        path: '[1].parameters.cmd',
        taskId: 'b',
      },
    ]);
  });

  it('parseTaskData - detects node roles in loaded data', () => {
    expect(parseTaskData({ compute: { tasks: ['a'] } }, 'p/node_roles.yaml').tasks.map((t) => t.id)).toEqual([
      'compute',
    ]);
  });

  it('parseDeploymentTasks - forced even for a tasks.yaml name', () => {
    expect(
      errors(parseDeploymentTasks(yaml(["- {role: '*', stage: pre_deployment, type: reboot}"]), 'p/tasks.yaml')),
    ).toEqual(["p/tasks.yaml:1: [0]: task has no 'id'"]);
  });
});

describe('mergeParseResults', () => {
  it('duplicate ids across files - error naming both file:line; first kept; diagnostics kept in order', () => {
    const a = parseTaskFile(yaml(['- {id: x, type: reboot}', '- {id: y, type: reboot, colour: red}']), 'a.yaml');
    const b = parseTaskFile(yaml(['- {id: z, type: reboot}', '- {id: y, type: skipped}']), 'b.yaml');
    const merged = mergeParseResults([a, b]);
    expect(merged.tasks.map((t) => `${t.source.file}:${t.id}`)).toEqual(['a.yaml:x', 'a.yaml:y', 'b.yaml:z']);
    expect(merged.diagnostics.map(formatDiagnostic)).toEqual([
      "a.yaml:2: [1].colour: task 'y': unknown field 'colour' is ignored",
      "b.yaml:2: task id 'y' is defined twice: a.yaml:2 and b.yaml:2",
    ]);
    expect(merged.diagnostics[1].code).toBe('TASK_DUPLICATE_ID');
  });
});

describe('assertNoErrors', () => {
  it('warnings only - returns the tasks', () => {
    const r = parseTaskFile(yaml(['- {id: y, type: reboot, colour: red}']), 'a.yaml');
    expect(assertNoErrors(r).map((t) => t.id)).toEqual(['y']);
  });

  it('errors - throws InvalidInputError carrying every diagnostic', () => {
    const r = parseTaskFile(yaml(['- {id: a, type: shell}', '- {id: b, type: nope}']), 'a.yaml');
    expect(() => assertNoErrors(r)).toThrow(InvalidInputError);
    try {
      assertNoErrors(r);
    } catch (e) {
      const err = e as InvalidInputError;
      expect(err.code).toBe('INVALID_INPUT');
      expect(err.diagnostics).toHaveLength(2);
      expect(err.message).toBe(
        [
          "a.yaml:1: [0].parameters.cmd: task 'a': a shell task needs parameters.cmd",
          `a.yaml:2: [1].type: task 'b': unknown task type "nope": expected one of stage, group, skipped, puppet, shell, upload_file, sync, copy_files, reboot (rsync = sync)`,
        ].join('\n'),
      );
    }
  });
});
