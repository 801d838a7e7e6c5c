import type { DeploymentRequested } from '@granule/run-events';

/** Environment statuses the event log gives an environment in config-store (Fuel's cluster statuses). */
export type ProjectedEnvironmentStatus = 'deployment' | 'operational' | 'partially_deployed' | 'error' | 'stopped';

/**
 * Whether a run's course is its environment's: a deployment of an environment's default graph
 * that changes the hosts. Dry runs, noop runs, check runs (ADR 0031), other graphs (provisioning, custom) and inline
 * inputs leave the environment's status alone; a strategy's phase runs speak through their
 * strategy run.
 */
export function runSpeaksForEnvironment(request: DeploymentRequested['data']): boolean {
  return (
    request.envId !== undefined &&
    request.graph === 'default' &&
    !request.dryRun &&
    !request.noop &&
    !request.check &&
    request.childOf === undefined
  );
}

/**
 * The environment status a run event calls for, or undefined: a run that starts (its plan or
 * strategy accepted) or resumes puts it in `deployment`; a success makes it `operational`, or
 * `partially_deployed` when nodes failed (within their tolerance, or a strategy's partial
 * outcome); a failure `error`; a stop `stopped`.
 */
export function environmentStatusAfter(event: { type: string; data: unknown }): ProjectedEnvironmentStatus | undefined {
  switch (event.type) {
    case 'PlanAccepted':
    case 'StrategyAccepted':
    case 'DeploymentResumed':
      return 'deployment';
    case 'DeploymentSucceeded': {
      const data = event.data as { failedNodes?: unknown; outcome?: unknown };
      const failed = Array.isArray(data?.failedNodes) && data.failedNodes.length > 0;
      return failed || data?.outcome === 'partial' ? 'partially_deployed' : 'operational';
    }
    case 'DeploymentFailed':
      return 'error';
    case 'DeploymentStopped':
      // A run stopped before it started (queued behind another run's nodes) changed nothing.
      return (event.data as { beforeStart?: unknown })?.beforeStart ? undefined : 'stopped';
    default:
      return undefined;
  }
}
