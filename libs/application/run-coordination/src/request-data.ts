import type { DeploymentRequested, StartDeployment } from '@granule/contracts';

/** The DeploymentRequested payload of a StartDeployment command (inline inputs are not kept; a reference to stored ones is). */
export function requestData(command: StartDeployment): DeploymentRequested['data'] {
  return {
    runId: command.runId,
    ...(command.envId ? { envId: command.envId } : {}),
    ...(command.inputs ? { inputs: { name: command.inputs.name, size: command.inputs.size } } : {}),
    graph: command.graph,
    ...(command.filters ? { filters: { ...command.filters } } : {}),
    ...(command.strategy ? { strategy: command.strategy } : {}),
    dryRun: command.dryRun,
    noop: command.noop,
    ...(command.check ? { check: true, ...(command.diff ? { diff: true } : {}) } : {}),
    ...(command.waitForLocks ? { waitForLocks: true } : {}),
  };
}
