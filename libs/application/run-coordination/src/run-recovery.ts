import type { RunEvent } from '@granule/contracts';
import { TERMINAL_RUN_EVENTS } from '@granule/contracts';
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
export async function leaseAndRead(
  ports: Pick<CoordinatorPorts, 'lease' | 'log'>,
  runId: string,
): Promise<RunEvent[] | undefined> {
  if (!(await ports.lease.acquire(runId))) return undefined;
  try {
    return await ports.log.read(runId);
  } catch (err) {
    await ports.lease.release(runId);
    throw err;
  }
}

const TERMINAL = new Set<string>(TERMINAL_RUN_EVENTS);

/**
 * Why a stop or resume cannot act on a run that no coordinator here drives, from its events:
 * it does not exist, it has ended (with how to go on, when `retryHint`), or another
 * orchestrator drives it. Each coordinator throws it with its own error class.
 */
export function notDrivenReason(
  runId: string,
  events: readonly RunEvent[],
  action: 'stop' | 'resume',
  retryHint: boolean,
): { code: 'RUN_UNKNOWN' | 'RUN_ENDED' | 'RUN_NOT_OWNED'; message: string } {
  if (events.length === 0) return { code: 'RUN_UNKNOWN', message: `run ${runId} does not exist` };
  const last = events[events.length - 1].type;
  if (TERMINAL.has(last) && !(action === 'resume' && last === 'DeploymentStopped')) {
    const retry =
      retryHint && (last === 'DeploymentFailed' || last === 'DeploymentStopped')
        ? `; granule retry ${runId} runs its unfinished tasks in a new run`
        : '';
    return {
      code: 'RUN_ENDED',
      message: `run ${runId} has ended (${last}): there is nothing to ${action}${action === 'resume' ? ' (only a stopped run can be resumed)' : ''}${retry}`,
    };
  }
  return { code: 'RUN_NOT_OWNED', message: `run ${runId} is driven by another orchestrator` };
}
