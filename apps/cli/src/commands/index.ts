import type { Command } from 'commander';
import { registerPlanCommand } from './plan.command';
import { registerPluginCommand } from './plugin.command';
import { registerStrategyCommand } from './strategy.command';
import { registerEnvCommand } from './env.command';
import { registerNodeCommand } from './node.command';
import { registerPluginServiceCommands } from './plugin-service.command';
import { registerReleaseCommand } from './release.command';
import { registerStrategyServiceCommands } from './strategy-service.command';
import { registerTasksCommand } from './tasks.command';
import { registerDeployCommand } from './deploy.command';
import { registerRunsCommands } from './runs.command';
import { registerGraphCommand } from './graph.command';

/** Every command group registers itself here (one file per group, `*.command.ts`). */
export function registerCommands(program: Command): void {
  registerPlanCommand(program);
  registerPluginCommand(program);
  registerStrategyCommand(program);
  registerPluginServiceCommands(program);
  registerStrategyServiceCommands(program);
  registerReleaseCommand(program);
  registerEnvCommand(program);
  registerNodeCommand(program);
  registerTasksCommand(program);
  registerDeployCommand(program);
  registerRunsCommands(program);
  registerGraphCommand(program);
}
