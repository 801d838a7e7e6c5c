import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { InvalidInputError, UsageError } from '@granule/core';
import { createPluginFromTemplate } from '@granule/plugin-files';
import { loadPluginTree, renderPluginValidation, validatePluginSource } from './plugin.command';

const root = path.resolve(__dirname, '../../../..');
const FIXTURE_V5 = path.join(root, 'examples/plugins/example-v5');
const RELEASE = path.join(root, 'examples/releases/example-release');

let tmp: string;
beforeEach(async () => {
  tmp = await mkdtemp(path.join(tmpdir(), 'granule-plugin-cli-'));
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('plugin validate', () => {
  it('create then validate - valid with no errors', async () => {
    const { dir } = await createPluginFromTemplate('fresh', { parent: tmp });
    const out = await validatePluginSource(dir);
    expect(out.valid).toBe(true);
    expect(out.errors).toEqual([]);
    expect(out.warnings).toEqual([]);
  });

  it('json findings carry code, message, file, path and line; text is one line per finding, then the summary', async () => {
    const { dir } = await createPluginFromTemplate('broken', { parent: tmp });
    const { writeFile } = await import('node:fs/promises');
    await writeFile(
      path.join(dir, 'deployment_tasks.yaml'),
      '- id: broken-install\n  type: shell\n  version: 2.0.0\n  roles: ["*"]\n  parameters:\n    cmd: echo\n    timeout: ten\n',
    );
    await writeFile(
      path.join(dir, 'tasks.yaml'),
      '- role: ["*"]\n  stage: post_deployment\n  type: shell\n  parameters: {cmd: echo, timeout: 1}\n',
    );
    const out = await validatePluginSource(dir);
    expect(out.valid).toBe(false);
    expect(out.errors).toEqual([
      {
        code: 'TASK_BAD_FIELD',
        message: `task 'broken-install': expected a number, got "ten"`,
        file: `${dir}/deployment_tasks.yaml`,
        path: '[0].parameters.timeout',
        line: 7,
      },
      {
        code: 'PLUGIN_TASKS_YAML_V5',
        message:
          'tasks.yaml is not supported in package 5.0.0 and must be empty; move its tasks to deployment_tasks.yaml with version: 2.0.0 and a stage',
        file: `${dir}/tasks.yaml`,
        line: 1,
      },
    ]);
    const text = renderPluginValidation(out, dir).split('\n');
    expect(text.filter((l) => l.startsWith('error: '))).toEqual([
      `error: ${dir}/deployment_tasks.yaml:7: [0].parameters.timeout: task 'broken-install': expected a number, got "ten"`,
      `error: ${dir}/tasks.yaml:1: tasks.yaml is not supported in package 5.0.0 and must be empty; move its tasks to deployment_tasks.yaml with version: 2.0.0 and a stage`,
    ]);
    expect(text.filter((l) => l.startsWith('warning: '))).toHaveLength(2);
    expect(text.slice(-2)).toEqual([`${dir}: invalid (2 errors, 2 warnings, 1 info)`, '']);
  });
});

describe('plugin load', () => {
  it('prints the loaded tree of the selected release', async () => {
    const tree = await loadPluginTree(RELEASE, { release: 'example-release' });
    expect(tree.environment).toEqual({ os: 'debian', version: '1.0.0' });
    const release = tree.release as { graphs: { type: string; tasks: { id: string }[] }[]; state: string };
    expect(release.state).toBe('available');
    expect(release.graphs.map((g) => [g.type, g.tasks.map((t) => t.id)])).toEqual([
      ['default', ['hello-shell', 'puppet-motd', 'sync-configs', 'upload-marker']],
      ['provisioning', ['provision-prepare']],
    ]);
  });

  it('an invalid plugin - refused with the validator report, as plugin validate gives it', async () => {
    const { dir } = await createPluginFromTemplate('unfit', { parent: tmp });
    const { writeFile } = await import('node:fs/promises');
    await writeFile(path.join(dir, 'metadata.yaml'), 'name: unfit\nreleases: []\n');
    const err = await loadPluginTree(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidInputError);
    const report = await validatePluginSource(dir);
    expect(report.errors.length).toBeGreaterThan(3);
    expect(
      (err as InvalidInputError).diagnostics.filter((d) => d.severity === 'error').map((d) => [d.code, d.file, d.line]),
    ).toEqual(report.errors.map((f) => [f.code, f.file, f.line]));
  });

  it('an unknown release is an input error; --os without --release-version a usage error', async () => {
    await expect(loadPluginTree(FIXTURE_V5, { release: 'nope' })).rejects.toThrow(
      new InvalidInputError([
        {
          severity: 'error',
          code: 'X',
          message: "no release matches release 'nope'; the plugin has: (debian 1.0.0)",
          file: `${FIXTURE_V5}/metadata.yaml`,
        },
      ]).message,
    );
    await expect(loadPluginTree(FIXTURE_V5, { os: 'debian' })).rejects.toThrow(UsageError);
  });
});
