import { Command } from 'commander';
import { registerCommands } from './commands';

/** The CLI; with `command`, only that command's group is loaded (see `registerCommands`). */
export function buildProgram(command?: string): Command {
  const program = new Command('granule')
    .description('Granule — plan and run task-graph deployments on fleets of hosts')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  registerCommands(program, command);
  for (const cmd of program.commands) cmd.exitOverride();
  return program;
}
