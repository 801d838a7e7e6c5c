import path from 'node:path';
import { formatDiagnostic } from '@granule/core';
import { loadPluginTasks, validatePlugin } from '@granule/plugin';
import { NodePluginFiles } from './node-plugin-files';

const root = path.resolve(__dirname, '../../../../examples');
const dirs = ['plugins/example-v5', 'plugins/example-v4', 'releases/example-release'];

describe('examples', () => {
  it.each(dirs)('%s validates with no errors', async (dir) => {
    const report = await validatePlugin(new NodePluginFiles(path.join(root, dir)));
    const errors = report.diagnostics.filter((d) => d.severity === 'error').map(formatDiagnostic);
    expect(errors).toEqual([]);
    expect(report.valid).toBe(true);
  });

  it('example-release - gives default and provisioning graphs', async () => {
    const set = await loadPluginTasks(new NodePluginFiles(path.join(root, 'releases/example-release')));
    expect(set.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(set.kind).toBe('release');
    expect(Object.keys(set.graphs)).toEqual(['default', 'provisioning']);
    expect(set.graphs.default.map((t) => t.id)).toEqual([
      'hello-shell',
      'puppet-motd',
      'sync-configs',
      'upload-marker',
    ]);
    expect(set.graphs.default.map((t) => t.source.file)).toEqual([
      'graphs/deployment/10-common.yaml',
      'graphs/deployment/20-roles.yaml',
      'graphs/deployment/20-roles.yaml',
      'graphs/deployment/20-roles.yaml',
    ]);
    expect(set.graphs.provisioning.map((t) => t.id)).toEqual(['provision-prepare']);
  });
});
