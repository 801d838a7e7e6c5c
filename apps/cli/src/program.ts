import { Command } from 'commander';
import { GRANULE_VERSION } from '@granule/core';
import { registerCommands } from './commands';

/** The CLI; with `command`, only that command's group is loaded (see `registerCommands`). */
export function buildProgram(command?: string, options: { json?: boolean } = {}): Command {
  const program = new Command('granule')
    .description('Granule — plan and run task-graph deployments on fleets of hosts')
    .version(GRANULE_VERSION, '--version', 'print the version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
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
