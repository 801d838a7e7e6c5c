import type { DeploymentRequested, RunEvent, StartDeployment } from '@granule/contracts';

/**
 * True for the parent run of a deployment with a strategy, driven by the strategy coordinator
 * (its phases are child runs, driven by the run coordinator), told by the run's first event.
 */
export function isStrategyParent(first: RunEvent | undefined): boolean {
  return first?.type === 'DeploymentRequested' && !!first.data.strategy && !first.data.childOf;
}

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
    ...(command.requestedBy ? { requestedBy: command.requestedBy } : {}),
  };
}
