import type { Command } from 'commander';
import { registerPlanCommand } from './plan.command';
import { registerPluginCommand } from './plugin.command';
import { registerStrategyCommand } from './strategy.command';

/** Every command group registers itself here (one file per group, `*.command.ts`). */
export function registerCommands(program: Command): void {
  registerPlanCommand(program);
  registerPluginCommand(program);
  registerStrategyCommand(program);
}
