import type { Command } from 'commander';

type Register = (program: Command) => unknown;

/**
 * Every command group, by the top-level command names it adds, with a loader that requires its
 * module only when needed: `granule plan ...` then loads the planner and not the NATS, database
 * and plugin-packaging code of the other commands (about 200 ms of start-up).
 */
const GROUPS: { names: string[]; load: () => Register[] }[] = [
  { names: ['plan'], load: () => [require('./plan.command').registerPlanCommand] },
  {
    names: ['plugin'],
    load: () => [
      require('./plugin.command').registerPluginCommand,
      require('./plugin-service.command').registerPluginServiceCommands,
    ],
  },
  {
    names: ['strategy'],
    load: () => [
      require('./strategy.command').registerStrategyCommand,
      require('./strategy-service.command').registerStrategyServiceCommands,
    ],
  },
  { names: ['release'], load: () => [require('./release.command').registerReleaseCommand] },
  { names: ['env'], load: () => [require('./env.command').registerEnvCommand] },
  { names: ['node'], load: () => [require('./node.command').registerNodeCommand] },
  { names: ['tasks'], load: () => [require('./tasks.command').registerTasksCommand] },
  { names: ['deploy'], load: () => [require('./deploy.command').registerDeployCommand] },
  { names: ['runs', 'stop', 'resume', 'retry'], load: () => [require('./runs.command').registerRunsCommands] },
  { names: ['graph'], load: () => [require('./graph.command').registerGraphCommand] },
  { names: ['watch'], load: () => [require('./watch.command').registerWatchCommand] },
  { names: ['auth'], load: () => [require('./auth.command').registerAuthCommand] },
  {
    names: ['agent'],
    load: () => [
      require('./auth.command').registerAgentCredentialCommands,
      require('./agent-package.command').registerAgentPackageCommand,
    ],
  },
  { names: ['audit'], load: () => [require('./audit.command').registerAuditCommand] },
  { names: ['completion'], load: () => [require('./completion.command').registerCompletionCommand] },
  { names: ['secrets'], load: () => [require('./secrets.command').registerSecretsCommand] },
];

/**
 * Registers the command group `command` belongs to, or every group (for `--help`, `help`, an
 * unknown command, or no command at all).
 */
export function registerCommands(program: Command, command?: string): void {
  const wanted = GROUPS.filter((g) => command !== undefined && g.names.includes(command));
  for (const group of wanted.length > 0 ? wanted : GROUPS) for (const register of group.load()) register(program);
}
