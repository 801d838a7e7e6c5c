import type { Command } from 'commander';
import type { PluginView } from '@granule/contracts';
import { addConnectionOptions, printResult, withConfigStore } from '../connection';
import { readPluginSourceFiles } from '@granule/config-store-client';
import { installRequest } from '../inputs/install-request';
import { helpExamples } from '../messages';

interface ServiceOptions {
  natsUrl?: string;
  subjectPrefix?: string;
  output: string;
  env?: string;
}

const COLUMNS = ['id', 'name', 'version', 'package_version', 'releases', 'environments'];
const row = (p: PluginView): Record<string, unknown> => ({
  ...p,
  releases: p.releases.map((r) => `${r.os} ${r.version}`),
});

/**
 * `granule plugin install|list|show|enable|disable|remove` — plugins in the config-store. Adds
 * to the `plugin` command (validate/load/build/create work offline) or creates it.
 */
export function registerPluginServiceCommands(program: Command): void {
  const plugin =
    program.commands.find((c) => c.name() === 'plugin') ?? program.command('plugin').description('Fuel plugins');
  const leaf = (name: string, description: string): Command =>
    addConnectionOptions(plugin.command(name).description(description)).option(
      '-o, --output <format>',
      'json | yaml | table',
      'table',
    );

  leaf('install', 'validate and install a plugin into the config-store from a folder or .tar.gz package')
    .argument('<source>', 'DIR or FILE.tar.gz')
    .addHelpText('after', '\nExample:\n  granule plugin install examples/plugins/example-v5')
    .action(async (source: string, opts: ServiceOptions) => {
      const body = await readPluginSourceFiles(source);
      const result = await withConfigStore(opts, async (c, nc) =>
        c.request('plugin.install', await installRequest(body, c, nc)),
      );
      await printResult(
        result,
        opts.output,
        { rows: result.plugin ? [row(result.plugin)] : [], columns: COLUMNS },
        result.warnings.filter((w) => w.severity === 'warning'),
      );
    });

  leaf('list', 'list plugins installed in the config-store')
    .addHelpText('after', helpExamples('granule plugin list', 'granule plugin list -o json'))
    .action(async (opts: ServiceOptions) => {
      const list = await withConfigStore(opts, (c) => c.request('plugin.list', {}));
      await printResult(list, opts.output, { rows: list.map(row), columns: COLUMNS });
    });

  leaf('show', 'show one installed plugin')
    .addHelpText('after', helpExamples('granule plugin show example-v5 -o yaml'))
    .argument('<id>', 'plugin id or name')
    .action(async (id: string, opts: ServiceOptions) => {
      const p = await withConfigStore(opts, (c) => c.request('plugin.get', { id }));
      await printResult(p, opts.output, { rows: [row(p)], columns: COLUMNS });
    });

  for (const [name, op, what] of [
    ['enable', 'env.plugin.enable', 'enable a plugin in an environment'],
    ['disable', 'env.plugin.disable', 'disable a plugin in an environment'],
  ] as const) {
    leaf(name, what)
      .addHelpText('after', helpExamples(`granule plugin ${name} example-v5 --env prod`))
      .argument('<plugin>', 'plugin id or name')
      .requiredOption('--env <id>', 'environment id or name')
      .action(async (ref: string, opts: ServiceOptions) => {
        const env = await withConfigStore(opts, (c) => c.request(op, { environment: opts.env as string, plugin: ref }));
        await printResult(env, opts.output, {
          rows: [{ ...env, plugins: env.plugins.map((p) => `${p.name}@${p.version}`) }],
          columns: ['id', 'name', 'plugins'],
        });
      });
  }

  leaf('remove', 'remove a plugin no environment has enabled')
    .addHelpText('after', helpExamples('granule plugin remove example-v5'))
    .argument('<id>', 'plugin id or name')
    .action(async (id: string, opts: ServiceOptions) => {
      const p = await withConfigStore(opts, (c) => c.request('plugin.remove', { id }));
      await printResult(p, opts.output, { rows: [row(p)], columns: COLUMNS });
    });
}
