import { Command } from 'commander';
import { GRANULE_VERSION } from '@granule/core';
import { registerCommands } from './commands';
import { formatAmong, type OutputFormat, parseFormat } from './output';

/** The output formats any of a command's modes takes, as its `-o` description names them. */
const FORMAT_WORDS = /\b(json|yaml|table|text|dot|mermaid)\b/g;

/**
 * `-o FORMAT` is checked before a command acts: a change made and then its output refused
 * (`node tag n1 web -o xml`) would be a surprise. Any format the option's description names is
 * let through; a command with modes (`plan`, whose `--simulate` prints a table: "(with
 * --simulate: ...)") checks its mode's own list when it prints. The error lists the formats
 * named outside parentheses, the command's plain ones. `-o text` and `-o table` are one format
 * for people, taken by either name.
 */
export function checkOutputFormat(cmd: Command): void {
  const option = cmd.options.find((o) => o.long === '--output');
  const value = cmd.opts<{ output?: unknown }>().output;
  if (!option || typeof value !== 'string') return;
  const formats = (text: string): OutputFormat[] => [...new Set(text.match(FORMAT_WORDS) ?? [])] as OutputFormat[];
  const named = formatAmong(value, formats(option.description));
  if (named !== undefined) {
    if (named !== value) cmd.setOptionValue('output', named);
    return;
  }
  const plain = formats(option.description.replace(/\([^)]*\)/g, ''));
  if (plain.length > 0) parseFormat(value, plain);
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
