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
  it('names the stored package in tasks whose paths are relative to it, and keeps the paths as written', async () => {
    const digest = '0'.repeat(64);
    const prepared = await preparePlugin(files, { artifactDigest: digest });
    const task = (
      prepared.pluginReleases[0].graphs.default as { id: string; parameters: Record<string, unknown> }[]
    ).find((t) => t.id === 'configure');
    expect(task?.parameters).toMatchObject({
      puppet_manifest: 'manifests/site.pp',
      puppet_modules: 'modules',
      $package: { name: 'anchored', version: prepared.version, digest },
    });
    expect(JSON.stringify(prepared)).not.toMatch(/"\//);
  });

  it('keeps the paths as written without stored files', async () => {
    const prepared = await preparePlugin(files);
    const task = (
      prepared.pluginReleases[0].graphs.default as { id: string; parameters: Record<string, unknown> }[]
    ).find((t) => t.id === 'configure');
    expect(task?.parameters).toMatchObject({ puppet_manifest: 'manifests/site.pp' });
  });
});
