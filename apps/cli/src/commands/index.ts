import type { Command } from 'commander';

/** Every command group registers itself here (one file per group, `*.command.ts`). */
export function registerCommands(program: Command): void {
  void program;
}
