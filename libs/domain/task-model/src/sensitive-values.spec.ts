import { parseTaskData } from './task-file-parser';
import {
  clearSecretDiagnostics,
  maskSettings,
  maskTaskParameters,
  sealSettings,
  sealSettingsPatch,
  sealTaskDefinitions,
  sealTaskRecords,
} from './secret-sealing';
import {
  MASK,
  isSealedValue,
  isSensitiveName,
  maskSealed,
  sealAt,
  sensitiveDataPaths,
  sensitiveParameterPaths,
  sensitiveSettingPaths,
  textsAt,
  type Seal,
} from './sensitive-values';

// A stand-in cipher: deterministic, so expected trees can be written out.
const seal: Seal = (v) => ({ $sealed: `S(${JSON.stringify(v)})` });

describe('isSensitiveName', () => {
  it.each([
    'password',
    'PASSWORD',
    'db_password',
    'dbpassword',
    'DBPassword',
    'admin_passwd',
    'ssh_passphrase',
    'secret',
    'AWS_SECRET_ACCESS_KEY',
    'client-secret',
    'token',
    'GITHUB_TOKEN',
    'authTokens',
    'key',
    'api_key',
    'apiKey',
    'API_KEY',
    'private_key',
    'privkey',
    'ssh_key_path',
    'keys',
    'credential',
    'credentials',
    'DB_PASS',
    'rabbit.pass',
  ])('%s - sensitive', (name) => expect(isSensitiveName(name)).toBe(true));

  it.each([
    'keystone_url',
    'keystone',
    'KEYBOARD_LAYOUT',
    'monkey',
    'tokenizer',
    'passive',
    'bypass',
    'public_key',
    'ssh_public_key',
    'publicKey',
    'cmd',
    'cwd',
    'PWD',
    'PATH',
    'timeout',
    'user',
    'username',
    'host',
  ])('%s - not sensitive', (name) => expect(isSensitiveName(name)).toBe(false));
});

describe('isSealedValue', () => {
  it('is exactly {$sealed: string}', () => {
    expect(isSealedValue({ $sealed: 'x' })).toBe(true);
    expect(isSealedValue({ $sealed: 'x', other: 1 })).toBe(false);
    expect(isSealedValue({ $sealed: 3 })).toBe(false);
    expect(isSealedValue('x')).toBe(false);
    expect(isSealedValue(null)).toBe(false);
  });
});

describe('sensitiveParameterPaths', () => {
  it('values under sensitive names at any depth, env variables included; other values are not', () => {
    const params = {
      cmd: 'run.sh',
      password: 'p1',
      env: { DB_PASSWORD: 'p2', KEYSTONE_URL: 'http://k', HOME: '/root' },
      config: { db: { api_key: 'p3' }, list: [{ token: 'p4' }] },
      timeout: 30,
    };
    expect(sensitiveParameterPaths(params)).toEqual([
      ['password'],
      ['env', 'DB_PASSWORD'],
      ['config', 'db', 'api_key'],
      ['config', 'list', 0, 'token'],
    ]);
  });

  it("the task's sensitive list marks more names; a sealed value counts wherever it is", () => {
    const params = { cmd: 'x', env: { DB_USER: 'u', ANSWER: { $sealed: 'abc' } }, data: 'file text' };
    expect(sensitiveParameterPaths(params, ['DB_USER', 'data'])).toEqual([
      ['env', 'DB_USER'],
      ['env', 'ANSWER'],
      ['data'],
    ]);
  });

  it('a setting leaf {value, type: password} or {value, sensitive: true} has its value marked, not its label', () => {
    const params = { admin: { value: 'v', type: 'password', label: 'Admin' }, extra: { value: 'w', sensitive: true } };
    expect(sensitiveParameterPaths(params)).toEqual([
      ['admin', 'value'],
      ['extra', 'value'],
    ]);
  });
});

describe('sensitiveSettingPaths and sensitiveDataPaths', () => {
  const settings = {
    common: { debug: { value: true, type: 'checkbox' } },
    access: { password: { value: 'admin', type: 'password', label: 'Password' }, user: { value: 'admin' } },
    storage: { ceph: { value: false }, rgw_key: 'k1' },
    db: { admin_token: { value: 't1', type: 'text' } },
    vault: { value: 'v1', sensitive: true },
  };

  it('settings: Fuel leaves by marker or name (their value only), bare values under sensitive names', () => {
    expect(sensitiveSettingPaths(settings)).toEqual([
      ['access', 'password', 'value'],
      ['storage', 'rgw_key'],
      ['db', 'admin_token', 'value'],
      ['vault', 'value'],
    ]);
  });

  it('data files: task records by the task rule and setting leaves, but not bare values under sensitive names', () => {
    const file = {
      attributes: settings,
      tasks: [
        { id: 't1', type: 'shell', parameters: { cmd: 'x', env: { API_TOKEN: 'a' } } },
        {
          id: 't2',
          type: 'puppet',
          sensitive: ['manifest_arg'],
          parameters: { puppet_manifest: 'm', manifest_arg: 'b' },
        },
        { id: 'not-a-task', type: 'text', parameters: { password: 'c' } },
      ],
    };
    expect(sensitiveDataPaths(file)).toEqual([
      ['attributes', 'access', 'password', 'value'],
      ['attributes', 'db', 'admin_token', 'value'],
      ['attributes', 'vault', 'value'],
      ['tasks', 0, 'parameters', 'env', 'API_TOKEN'],
      ['tasks', 1, 'parameters', 'manifest_arg'],
    ]);
  });
});

describe('sealAt, maskAt and textsAt', () => {
  it('seals clear values only, copies only what it changes, and without a seal lists what needed one', () => {
    const params = { cmd: 'x', env: { A_TOKEN: 't', B_TOKEN: '', C_TOKEN: { $sealed: 'old' } }, other: { n: 1 } };
    const paths = sensitiveParameterPaths(params);
    const sealed = sealAt(params, paths, seal);
    expect(sealed.value).toEqual({
      cmd: 'x',
      env: { A_TOKEN: { $sealed: 'S("t")' }, B_TOKEN: '', C_TOKEN: { $sealed: 'old' } },
      other: { n: 1 },
    });
    expect(sealed.value.other).toBe(params.other);
    expect(params.env.A_TOKEN).toBe('t');
    expect(sealAt(params, paths).clear).toEqual([['env', 'A_TOKEN']]);
    expect(sealAt(sealed.value, paths).clear).toEqual([]);
  });

  it('masks secrets and every sealed value for display', () => {
    const task = {
      parameters: { cmd: 'x', password: 'p', env: { X: { $sealed: 's' } }, note: 'n' },
      sensitive: ['note'],
    };
    expect(maskTaskParameters(task)).toEqual({ cmd: 'x', password: MASK, env: { X: MASK }, note: MASK });
    expect(maskSealed({ a: [{ $sealed: 's' }, 'b'] })).toEqual({ a: [MASK, 'b'] });
    expect(maskSettings({ access: { password: { value: 'admin', label: 'Password' } } })).toEqual({
      access: { password: { value: MASK, label: 'Password' } },
    });
  });

  it('textsAt gives the strings and numbers to mask in output, nested ones too', () => {
    const params = { env: { PIN: 1234, PW: 'hunter2', FLAG: true }, creds: { user: 'u', list: ['a', ''] } };
    expect(textsAt(params, [['env', 'PIN'], ['env', 'PW'], ['env', 'FLAG'], ['creds']]).sort()).toEqual(
      ['1234', 'a', 'hunter2', 'u'].sort(),
    );
  });
});

describe('sealing tasks and settings', () => {
  it('task records: sealed by name and by their sensitive list; unsealed ones named with their task', () => {
    const records = [
      { id: 'a', type: 'shell', parameters: { cmd: 'x', password: 'p' } },
      { id: 'b', type: 'shell', sensitive: ['DB_USER'], parameters: { cmd: 'y', env: { DB_USER: 'u' } } },
      { id: 'c', type: 'shell', parameters: { cmd: 'z' } },
    ];
    const sealed = sealTaskRecords(records, seal);
    expect(sealed.records.map((r) => r.parameters)).toEqual([
      { cmd: 'x', password: { $sealed: 'S("p")' } },
      { cmd: 'y', env: { DB_USER: { $sealed: 'S("u")' } } },
      { cmd: 'z' },
    ]);
    expect(sealed.records[2]).toBe(records[2]);
    const unsealed = sealTaskRecords(records);
    expect(unsealed.records).toEqual(records);
    expect(clearSecretDiagnostics(unsealed.clear, { file: 'tasks.yaml' }, 'set the key')).toEqual([
      {
        severity: 'error',
        code: 'SECRET_NOT_SEALED',
        file: 'tasks.yaml',
        path: '[0].parameters.password',
        taskId: 'a',
        message: 'a secret in clear: set the key',
      },
      {
        severity: 'error',
        code: 'SECRET_NOT_SEALED',
        file: 'tasks.yaml',
        path: '[1].parameters.env.DB_USER',
        taskId: 'b',
        message: 'a secret in clear: set the key',
      },
    ]);
  });

  it('parsed tasks keep their sensitive list, and are sealed by it', () => {
    const parsed = parseTaskData(
      [{ id: 'a', type: 'shell', sensitive: ['SEED'], parameters: { cmd: 'x', env: { SEED: 's', api_key: 'k' } } }],
      'tasks.yaml',
    );
    expect(parsed.diagnostics).toEqual([]);
    expect(parsed.tasks[0].sensitive).toEqual(['SEED']);
    const sealed = sealTaskDefinitions(parsed.tasks, seal);
    expect(sealed.tasks[0].parameters.env).toEqual({ SEED: { $sealed: 'S("s")' }, api_key: { $sealed: 'S("k")' } });
    expect(sealTaskDefinitions(parsed.tasks).clear).toEqual([
      { path: ['parameters', 'env', 'SEED'], taskId: 'a', file: 'tasks.yaml' },
      { path: ['parameters', 'env', 'api_key'], taskId: 'a', file: 'tasks.yaml' },
    ]);
  });

  it('settings patches: judged on the tree they describe; an entry inside a secret is sealed whole', () => {
    const patch = {
      'db.password': 'p1',
      'access.password': { value: 'p2', type: 'password' },
      'vault.value': 'p3',
      'vault.sensitive': true,
      'storage.ceph.value': true,
      'old.token': null,
    };
    expect(sealSettingsPatch(patch, seal).patch).toEqual({
      'db.password': { $sealed: 'S("p1")' },
      'access.password': { value: { $sealed: 'S("p2")' }, type: 'password' },
      'vault.value': { $sealed: 'S("p3")' },
      'vault.sensitive': true,
      'storage.ceph.value': true,
      'old.token': null,
    });
    expect(sealSettingsPatch(patch).clear).toEqual([
      { path: ['db.password'] },
      { path: ['access.password', 'value'] },
      { path: ['vault.value'] },
    ]);
  });

  it('settings', () => {
    const s = { access: { password: { value: 'admin', type: 'password' } }, debug: true };
    expect(sealSettings(s, seal).settings).toEqual({
      access: { password: { value: { $sealed: 'S("admin")' }, type: 'password' } },
      debug: true,
    });
    expect(sealSettings(s).clear).toEqual([{ path: ['access', 'password', 'value'] }]);
  });
});

describe('the sensitive list of a task record', () => {
  const parse = (record: Record<string, unknown>) => parseTaskData([{ id: 't', type: 'shell', ...record }], 'f.yaml');

  it('takes a name or a list of names of its parameters or env variables', () => {
    expect(parse({ sensitive: 'X', parameters: { cmd: 'c', env: { X: '1' } } }).tasks[0].sensitive).toEqual(['X']);
    expect(parse({ sensitive: ['X', 'cmd'], parameters: { cmd: 'c', env: { X: '1' } } }).tasks[0].sensitive).toEqual([
      'X',
      'cmd',
    ]);
  });

  it('refuses a name no parameter has, a time budget parameter and a non-name', () => {
    const r = parse({ sensitive: ['NOPE', 'timeout', 3], parameters: { cmd: 'c', timeout: 5, env: { X: '1' } } });
    expect(r.tasks).toEqual([]);
    expect(r.diagnostics.map((d) => `${d.path}: ${d.message}`)).toEqual([
      "[0].sensitive[0]: 'NOPE' names no parameter or env variable of this task (it has: X, cmd, env, timeout)",
      '[0].sensitive[1]: parameters.timeout cannot be secret: the orchestrator reads it to time the task (a secret is opened only for the agent)',
      '[0].sensitive[2]: expected a parameter or env name, got 3',
    ]);
    expect(parse({ sensitive: { a: 1 }, parameters: { cmd: 'c' } }).diagnostics[0].message).toBe(
      'expected a list of parameter or env names, got a mapping',
    );
  });

  it('a sealed value passes where a string is expected, and nowhere else', () => {
    const ok = parse({ sensitive: ['cmd'], parameters: { cmd: { $sealed: 'x' } } });
    expect(ok.diagnostics).toEqual([]);
    const bad = parse({ parameters: { cmd: 'c', retries: { $sealed: 'x' } } });
    expect(bad.diagnostics.map((d) => d.message)).toEqual(['expected a number, got a mapping']);
  });
});
