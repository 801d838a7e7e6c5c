import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Runs the built CLI (./granule builds dist/ when sources changed).
const root = join(__dirname, '..', '..', '..', '..');
const granule = (...args: string[]) =>
  spawnSync(join(root, 'granule'), args, { cwd: root, encoding: 'utf8', timeout: 120_000 });

describe('granule plugin (built CLI)', () => {
  let tmp: string;
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'granule-plugin-e2e-'));
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('create, validate -o json, build twice (same bytes)', () => {
    expect(granule('plugin', 'create', 'e2e_plugin', '--dir', tmp).status).toBe(0);
    const v = granule('plugin', 'validate', join(tmp, 'e2e_plugin'), '-o', 'json');
    expect(v.status).toBe(0);
    expect(JSON.parse(v.stdout)).toMatchObject({ valid: true, errors: [], warnings: [] });
    const a = granule('plugin', 'build', join(tmp, 'e2e_plugin'), '--out', join(tmp, 'a.tar.gz'));
    const b = granule('plugin', 'build', join(tmp, 'e2e_plugin'), '--out', join(tmp, 'b.tar.gz'));
    expect([a.status, b.status]).toEqual([0, 0]);
    expect(readFileSync(join(tmp, 'a.tar.gz')).equals(readFileSync(join(tmp, 'b.tar.gz')))).toBe(true);
    expect(granule('plugin', 'validate', join(tmp, 'a.tar.gz')).status).toBe(0);
  });

  it('validate exits 1 for an invalid plugin; load prints json; a bad -o is exit 2', () => {
    const bad = granule('plugin', 'validate', 'examples/strategies', '-o', 'json');
    expect(bad.status).toBe(1);
    expect(JSON.parse(bad.stdout).errors[0].code).toBe('PLUGIN_NO_METADATA');
    const load = granule('plugin', 'load', 'examples/plugins/example-v5', '-o', 'json');
    expect(load.status).toBe(0);
    expect(Object.keys(JSON.parse(load.stdout).files)).toEqual([
      'environment_config',
      'node_roles',
      'deployment_tasks',
    ]);
    expect(granule('plugin', 'validate', 'examples/plugins/example-v5', '-o', 'xml').status).toBe(2);
  });
});
