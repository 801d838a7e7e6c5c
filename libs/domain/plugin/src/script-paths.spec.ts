import { assertNoErrors, parseTaskFile } from '@granule/task-model';
import { PACKAGE_PARAMETER, anchorScriptPaths, markPackageTasks, packageOf } from './script-paths';

describe('anchorScriptPaths', () => {
  const tasks = assertNoErrors(
    parseTaskFile(
      `
- {id: sh, type: shell, roles: '*', parameters: {cmd: ./deploy.sh}}
- {id: sh-cwd, type: shell, roles: '*', parameters: {cmd: ls, cwd: /var/tmp}}
- {id: pp, type: puppet, roles: '*', parameters: {puppet_manifest: puppet/site.pp, puppet_modules: 'puppet/modules:/etc/puppet/modules'}}
- {id: rs, type: sync, roles: '*', parameters: {src: files/configs/, dst: state/configs/}}
- {id: remote, type: sync, roles: '*', parameters: {src: 'rsync://master/plugins/x/', dst: state/x/}}
- {id: cp, type: copy_files, roles: '*', parameters: {files: [{src: files/a.conf, dst: state/a.conf}]}}
- {id: up, type: upload_file, roles: '*', parameters: {path: state/m, data: x}}
`,
      'deployment_tasks.yaml',
    ),
  );
  const anchored = new Map(anchorScriptPaths(tasks, '/opt/p/deployment_scripts').map((t) => [t.id, t.parameters]));

  it('runs shell tasks in the scripts folder unless they set cwd', () => {
    expect(anchored.get('sh')?.cwd).toBe('/opt/p/deployment_scripts');
    expect(anchored.get('sh-cwd')?.cwd).toBe('/var/tmp');
  });

  it('takes relative manifests, module paths and sources from the scripts folder, keeping trailing slashes', () => {
    expect(anchored.get('pp')).toMatchObject({
      puppet_manifest: '/opt/p/deployment_scripts/puppet/site.pp',
      puppet_modules: '/opt/p/deployment_scripts/puppet/modules:/etc/puppet/modules',
    });
    expect(anchored.get('rs')).toMatchObject({
      src: '/opt/p/deployment_scripts/files/configs/',
      dst: 'state/configs/',
    });
    expect(anchored.get('remote')?.src).toBe('rsync://master/plugins/x/');
    expect(anchored.get('cp')?.files).toEqual([{ src: '/opt/p/deployment_scripts/files/a.conf', dst: 'state/a.conf' }]);
    expect(anchored.get('up')).toEqual({ path: 'state/m', data: 'x' });
  });
});

describe('markPackageTasks', () => {
  const ref = { name: 'p', version: '1.0.0', digest: 'a'.repeat(64) };
  const tasks = assertNoErrors(
    parseTaskFile(
      `
- {id: sh, type: shell, roles: '*', parameters: {cmd: ./deploy.sh}}
- {id: sh-abs, type: shell, roles: '*', parameters: {cmd: ls, cwd: /var/tmp}}
- {id: pp-abs, type: puppet, roles: '*', parameters: {puppet_manifest: /etc/site.pp, puppet_modules: /etc/m, cwd: /}}
- {id: pp, type: puppet, roles: '*', parameters: {puppet_manifest: site.pp, cwd: /}}
- {id: rs, type: sync, roles: '*', parameters: {src: files/, dst: x/}}
- {id: remote, type: sync, roles: '*', parameters: {src: 'rsync://master/x/', dst: x/}}
- {id: cp, type: copy_files, roles: '*', parameters: {files: [{src: /etc/hosts, dst: a}, {src: a.conf, dst: b}]}}
- {id: up, type: upload_file, roles: '*', parameters: {path: m, data: x, $package: {name: q, version: '1', digest: forged}}}
`,
      'deployment_tasks.yaml',
    ),
  );
  const marked = new Map(markPackageTasks(tasks, ref).map((t) => [t.id, t.parameters[PACKAGE_PARAMETER]]));

  it('names the package in every task whose paths are relative to it, and in no other', () => {
    expect([...marked].filter(([, v]) => v !== undefined).map(([id]) => id)).toEqual(['sh', 'pp', 'rs', 'cp']);
    expect(marked.get('sh')).toEqual(ref);
  });

  it('drops a $package a task file wrote itself', () => {
    expect(marked.has('up')).toBe(true);
    expect(marked.get('up')).toBeUndefined();
  });

  it('reads a dispatched reference and says what is wrong with a bad one', () => {
    expect(packageOf({ [PACKAGE_PARAMETER]: ref })).toEqual(ref);
    expect(packageOf({})).toBeUndefined();
    expect(packageOf({ [PACKAGE_PARAMETER]: { ...ref, digest: 'x' } })).toMatch(/expected \{name, version, digest/);
  });
});
