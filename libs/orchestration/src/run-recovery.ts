import type { RunEvent } from '@granule/contracts';
import type { CoordinatorPorts } from './ports';

/**
 * True for the parent run of a deployment with a strategy, driven by the strategy coordinator
 * (its phases are child runs, driven by the run coordinator), told by the run's first event.
 */
export function isStrategyParent(first: RunEvent | undefined): boolean {
  return first?.type === 'DeploymentRequested' && !!first.data.strategy && !first.data.childOf;
}

/**
 * Takes the lease of `runId` and reads its events; undefined, without a read, when another
 * orchestrator holds it (recovery asks on every tick). A failed read gives the lease back.
 */
export async function leaseAndRead(ports: Pick<CoordinatorPorts, 'lease' | 'log'>, runId: string): Promise<RunEvent[] | undefined> {
  if (!(await ports.lease.acquire(runId))) return undefined;
  try {
    return await ports.log.read(runId);
  } catch (err) {
    await ports.lease.release(runId);
    throw err;
  }
}
