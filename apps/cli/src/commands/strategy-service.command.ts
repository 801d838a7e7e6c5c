import type { Command } from 'commander';
import type { StrategyView } from '@granule/contracts';
import { readInputFile } from '../inputs/read-input';
import { writeOut } from '../output';
import { addConnectionOptions, printResult, withConfigStore } from '../connection';
import { helpExamples } from '../messages';

interface StrategyOptions {
  natsUrl?: string;
  subjectPrefix?: string;
  output: string;
  name?: string;
  replace?: boolean;
}

const COLUMNS = ['name', 'groups', 'uploaded_at'];
const row = (s: StrategyView): Record<string, unknown> => ({
  name: s.name,
  groups: s.groups,
  uploaded_at: s.uploaded_at,
});

/**
 * `granule strategy upload|list|show|remove` — deployment strategies in the config-store. Adds
 * to the `strategy` command (validate/plan/simulate work offline) or creates it.
 */
export function registerStrategyServiceCommands(program: Command): void {
  const strategy =
    program.commands.find((c) => c.name() === 'strategy') ??
    program.command('strategy').description('deployment strategies');
  const leaf = (name: string, description: string): Command =>
    addConnectionOptions(strategy.command(name).description(description)).option(
      '-o, --output <format>',
      'json | yaml | table',
      'table',
    );

  leaf('upload', 'validate a strategy document and store it in the config-store')
    .argument('<file>', 'deployment strategy YAML (groups, selectors, success criteria)')
    .option('--name <name>', "name to store it under; default: the document's metadata.name")
    .option('--replace', 'replace a stored strategy of the same name')
    .addHelpText('after', '\nExample:\n  granule strategy upload examples/strategies/deployment-strategy.yaml')
    .action(async (file: string, opts: StrategyOptions) => {
      const document = await readInputFile(file);
      const s = await withConfigStore(opts, (c) =>
        c.request('strategy.upload', {
          document,
          file,
          ...(opts.name ? { name: opts.name } : {}),
          ...(opts.replace ? { replace: true } : {}),
        }),
      );
      await printResult(row(s), opts.output, { columns: COLUMNS });
    });

  leaf('list', 'list stored strategies')
    .addHelpText('after', helpExamples('granule strategy list'))
    .action(async (opts: StrategyOptions) => {
      const list = await withConfigStore(opts, (c) => c.request('strategy.list', {}));
      await printResult(list.map(row), opts.output, { columns: COLUMNS });
    });

  leaf('show', 'print a stored strategy (table: the document as uploaded)')
    .addHelpText('after', helpExamples('granule strategy show example', 'granule strategy show example -o json'))
    .argument('<name>', 'strategy name')
    .action(async (name: string, opts: StrategyOptions) => {
      const s = await withConfigStore(opts, (c) => c.request('strategy.get', { name }));
      if (opts.output === 'table') await writeOut(s.document.endsWith('\n') ? s.document : `${s.document}\n`);
      else await printResult(s, opts.output);
    });

  leaf('remove', 'remove a stored strategy')
    .addHelpText('after', helpExamples('granule strategy remove example'))
    .argument('<name>', 'strategy name')
    .action(async (name: string, opts: StrategyOptions) => {
      const s = await withConfigStore(opts, (c) => c.request('strategy.remove', { name }));
      await printResult(row(s), opts.output, { columns: COLUMNS });
    });
}
