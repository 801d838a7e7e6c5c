import type { Command } from 'commander';
import type { ReleaseView } from '@granule/contracts';
import { addConnectionOptions, printResult, withConfigStore } from '../connection';
import { readPluginSourceFiles } from '@granule/config-store-client';
import { installRequest } from '../inputs/install-request';
import { helpExamples } from '../messages';

interface ServiceOptions {
  natsUrl?: string;
  subjectPrefix?: string;
  output: string;
}

export const RELEASE_COLUMNS = ['id', 'name', 'version', 'operating_system', 'tasks', 'plugin'];

/** A release as a table row: tasks per graph, `plugin@version`. */
export function releaseRow(r: ReleaseView): Record<string, unknown> {
  return {
    ...r,
    tasks: Object.entries(r.graphs).map(([g, n]) => `${g}:${n}`),
    plugin: `${r.plugin.name}@${r.plugin.version}`,
  };
}

/** `granule release list|show|install|remove` — releases in the config-store (over NATS). */
export function registerReleaseCommand(program: Command): void {
  const release = program
    .command('release')
    .description('releases installed in the config-store (a release is a plugin with is_release: true)');
  const leaf = (name: string, description: string): Command =>
    addConnectionOptions(release.command(name).description(description)).option(
      '-o, --output <format>',
      'json | yaml | table',
      'table',
    );

  leaf('list', 'list installed releases')
    .addHelpText('after', helpExamples('granule release list', 'granule release list -o json'))
    .action(async (opts: ServiceOptions) => {
      const list = await withConfigStore(opts, (c) => c.request('release.list', {}));
      await printResult(list, opts.output, { rows: list.map(releaseRow), columns: RELEASE_COLUMNS });
    });

  leaf('show', 'show one release')
    .addHelpText('after', helpExamples('granule release show example-release -o yaml'))
    .argument('<id>', 'release id or name')
    .action(async (id: string, opts: ServiceOptions) => {
      const r = await withConfigStore(opts, (c) => c.request('release.get', { id }));
      await printResult(r, opts.output, { rows: [releaseRow(r)], columns: RELEASE_COLUMNS });
    });

  leaf('install', 'validate and install a release plugin from a folder or .tar.gz package')
    .argument('<source>', 'DIR or FILE.tar.gz')
    .addHelpText('after', '\nExample:\n  granule release install examples/releases/example-release')
    .action(async (source: string, opts: ServiceOptions) => {
      const body = await readPluginSourceFiles(source);
      const result = await withConfigStore(opts, async (c, nc) =>
        c.request('release.install', await installRequest(body, c, nc)),
      );
      await printResult(
        result,
        opts.output,
        { rows: result.releases.map(releaseRow), columns: RELEASE_COLUMNS },
        result.warnings.filter((w) => w.severity === 'warning'),
      );
    });

  leaf('remove', 'remove a release no environment uses')
    .addHelpText('after', helpExamples('granule release remove example-release'))
    .argument('<id>', 'release id or name')
    .action(async (id: string, opts: ServiceOptions) => {
      const r = await withConfigStore(opts, (c) => c.request('release.remove', { id }));
      await printResult(r, opts.output, { rows: [releaseRow(r)], columns: RELEASE_COLUMNS });
    });
}
