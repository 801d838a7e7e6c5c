import { Command } from 'commander';
import { GRANULE_VERSION } from '@granule/core';
import { registerCommands } from './commands';
import { type OutputFormat, parseFormat } from './output';

/** The output formats any of a command's modes takes, as its `-o` description names them. */
const FORMAT_WORDS = /\b(json|yaml|table|text|dot|mermaid)\b/g;

/**
 * `-o FORMAT` is checked before a command acts: a change made and then its output refused
 * (`node tag n1 web -o xml`) would be a surprise. The formats are those the option's description
 * names; a command with modes (plan --simulate) still checks its mode's own list when it prints.
 */
export function checkOutputFormat(cmd: Command): void {
  const option = cmd.options.find((o) => o.long === '--output');
  const value = cmd.opts<{ output?: unknown }>().output;
  if (!option || typeof value !== 'string') return;
  const formats = [...new Set(option.description.match(FORMAT_WORDS) ?? [])];
  if (formats.length > 0) parseFormat(value, formats as OutputFormat[]);
}

/** The CLI; with `command`, only that command's group is loaded (see `registerCommands`). */
export function buildProgram(command?: string, options: { json?: boolean } = {}): Command {
  const program = new Command('granule')
    .description('Granule — plan and run task-graph deployments on fleets of hosts')
    .version(GRANULE_VERSION, '--version', 'print the version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .hook('preAction', (_program, action) => checkOutputFormat(action));
  registerCommands(program, command);
  const each = (cmd: Command): void => {
    cmd.exitOverride();
    // Under -o json commander's own error text is not printed: main prints the error as JSON.
    if (options.json) cmd.configureOutput({ writeErr: () => undefined, outputError: () => undefined });
    for (const sub of cmd.commands) each(sub);
  };
  each(program);
  return program;
}
