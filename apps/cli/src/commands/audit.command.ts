import type { Command } from 'commander';
import { UsageError } from '@granule/core';
import { addConnectionOptions, printResult, withConfigStore } from '../connection';
import { helpExamples } from '../messages';

interface AuditOptions {
  natsUrl?: string;
  subjectPrefix?: string;
  output: string;
  limit: string;
}

const COLUMNS = ['at', 'caller', 'role', 'transport', 'operation', 'target', 'outcome'];

/** `granule audit list` — who changed which configuration, newest first. */
export function registerAuditCommand(program: Command): void {
  const audit = program
    .command('audit')
    .description('the audit of configuration changes: who asked for which change, over NATS or HTTP');
  addConnectionOptions(audit.command('list').description('list configuration changes, newest first'))
    .option('-o, --output <format>', 'json | yaml | table', 'table')
    .option('--limit <n>', 'how many entries, from 1 to 1000', '100')
    .addHelpText('after', helpExamples('granule audit list', 'granule audit list --limit 20 -o json'))
    .action(async (opts: AuditOptions) => {
      const limit = /^\d+$/.test(opts.limit) ? Number(opts.limit) : NaN;
      if (!(limit >= 1 && limit <= 1000))
        throw new UsageError(`--limit ${opts.limit}: expected a whole number from 1 to 1000`);
      const entries = await withConfigStore(opts, (c) => c.request('audit.list', { limit }));
      await printResult(entries, opts.output, { rows: entries.map((e) => ({ ...e })), columns: COLUMNS });
    });
}
