import { InvalidInputError } from '@granule/core';
import { assertRolesDefined, definedRoles, undefinedRoles } from './defined-roles';
import { parseTaskRecordList } from './task-record';

const shell = (id: string, extra: Record<string, unknown>): Record<string, unknown> => ({
  id,
  type: 'shell',
  version: '2.0.0',
  parameters: { cmd: 'true' },
  ...extra,
});

// Roles come from `roles`, `groups` and `role`, as names, regexes, '*' and master.
const TASKS = parseTaskRecordList(
  [
    { id: 'controller', type: 'group', roles: ['controller'], tasks: [] },
    shell('net', { groups: ['compute', '/^ctrl-.*$/'] }),
    shell('hiera', { roles: '*' }),
    shell('backup', { role: ['storage'] }),
    shell('bootstrap', { roles: 'master' }),
    shell('cephx', { roles: ['/^ceph/'] }),
  ],
  'releases/1/default',
).tasks;

function refusal(roles: string[], tasks = TASKS): InvalidInputError {
  try {
    assertRolesDefined(roles, tasks, 'prod');
  } catch (err) {
    if (err instanceof InvalidInputError) return err;
    throw err;
  }
  throw new Error('expected the roles to be refused');
}

describe('roles an environment defines', () => {
  it('definedRoles - lists the names and regexes of role lists, not * or master', () => {
    expect(definedRoles(TASKS)).toEqual({
      names: ['compute', 'controller', 'storage'],
      patterns: ['/^ceph/', '/^ctrl-.*$/'],
    });
  });

  it('undefinedRoles - a name, a regex match (anchored at the start, like the planner) are defined', () => {
    expect(undefinedRoles(['controller', 'compute', 'storage', 'ctrl-1', 'ceph-osd'], TASKS)).toEqual([]);
    // /^ceph/ is anchored at the start only, as Fuel's re.match: ceph-osd-x matches too.
    expect(undefinedRoles(['ceph-osd-x', 'xceph', 'ctrl', 'controler', 'compute'], TASKS)).toEqual([
      'xceph',
      'ctrl',
      'controler',
    ]);
  });

  it("undefinedRoles - a '*' task does not define every role, and master is no role", () => {
    const starOnly = parseTaskRecordList([shell('hiera', { roles: '*' })], 'r').tasks;
    expect(undefinedRoles(['anything'], starOnly)).toEqual(['anything']);
    expect(undefinedRoles(['master'], TASKS)).toEqual(['master']);
  });

  it('assertRolesDefined - names each unknown role, the environment and the roles it defines', () => {
    expect(() => assertRolesDefined(['controller', 'ctrl-2'], TASKS, 'prod')).not.toThrow();
    const err = refusal(['controler', 'controller', 'cmpute']);
    expect(err.diagnostics.map((d) => [d.code, d.path])).toEqual([
      ['CONFIG_UNKNOWN_ROLE', 'roles'],
      ['CONFIG_UNKNOWN_ROLE', 'roles'],
    ]);
    expect(err.message).toBe(
      [
        "roles: role 'controler' is not defined by the release or the plugins of environment 'prod'; it defines compute, controller, storage, /^ceph/, /^ctrl-.*$/",
        "roles: role 'cmpute' is not defined by the release or the plugins of environment 'prod'; it defines compute, controller, storage, /^ceph/, /^ctrl-.*$/",
      ].join('\n'),
    );
  });

  it('assertRolesDefined - says when the tasks define no role at all', () => {
    const starOnly = parseTaskRecordList([shell('hiera', { roles: '*' })], 'r').tasks;
    expect(refusal(['web'], starOnly).message).toBe(
      "roles: role 'web' is not defined by the release or the plugins of environment 'prod'; it defines none (its tasks run on every node ('*') or on the master host)",
    );
  });
});
