import type { DeploymentRequested, StartDeployment } from '@granule/contracts';

/** The DeploymentRequested payload of a StartDeployment command (inline inputs are not kept). */
export function requestData(command: StartDeployment): DeploymentRequested['data'] {
  return {
    runId: command.runId,
    ...(command.envId ? { envId: command.envId } : {}),
    graph: command.graph,
    ...(command.filters ? { filters: { ...command.filters } } : {}),
    ...(command.strategy ? { strategy: command.strategy } : {}),
    dryRun: command.dryRun,
    noop: command.noop,
  };
}
