import { MemoryPluginFiles } from '@granule/plugin';
import { preparePlugin } from './plugin-install';

const files = new MemoryPluginFiles(
  {
    'metadata.yaml': [
      'name: anchored',
      'title: Anchored',
      "version: '1.0.0'",
      "package_version: '5.0.0'",
      'description: x',
      "licenses: ['Apache License Version 2.0']",
      "authors: ['a']",
      'homepage: https://example.com',
      'groups: []',
      'is_hotpluggable: false',
      'releases:',
      '  - os: debian',
      "    version: '1.0.0'",
      '    deployment_scripts_path: deployment_scripts/',
      '    repository_path: repositories/',
    ].join('\n'),
    'deployment_tasks.yaml': [
      '- id: configure',
      '  type: puppet',
      "  version: '2.0.0'",
      "  roles: ['*']",
      '  requires: [deploy_start]',
      '  required_for: [deploy_end]',
      '  parameters: {puppet_manifest: manifests/site.pp, puppet_modules: modules, timeout: 60}',
    ].join('\n'),
    'deployment_scripts/': '',
    'repositories/': '',
  },
  'anchored',
);

describe('preparePlugin', () => {
  it('anchors relative script paths at the scripts folder the nodes see', async () => {
    const prepared = await preparePlugin(files, { scriptsDir: '/srv/plugins/anchored/deployment_scripts' });
    const task = (
      prepared.pluginReleases[0].graphs.default as { id: string; parameters: Record<string, unknown> }[]
    ).find((t) => t.id === 'configure');
    expect(task?.parameters).toMatchObject({
      puppet_manifest: '/srv/plugins/anchored/deployment_scripts/manifests/site.pp',
      puppet_modules: '/srv/plugins/anchored/deployment_scripts/modules',
    });
  });

  it('keeps the paths as written without a scripts folder (a package)', async () => {
    const prepared = await preparePlugin(files);
    const task = (
      prepared.pluginReleases[0].graphs.default as { id: string; parameters: Record<string, unknown> }[]
    ).find((t) => t.id === 'configure');
    expect(task?.parameters).toMatchObject({ puppet_manifest: 'manifests/site.pp' });
  });
});
