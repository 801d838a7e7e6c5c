import { isTerminalRunEvent, runUnknownMessage } from '@granule/run-events';
import type { RunEvent } from '@granule/run-events';

/**
 * Why a stop or resume cannot act on a run that no coordinator here drives, from its events:
 * it does not exist, it has ended (with how to go on, when `retryHint`), or another
 * orchestrator drives it.
 */
export function notDrivenReason(
  runId: string,
  events: readonly RunEvent[],
  action: 'stop' | 'resume',
  retryHint: boolean,
): { code: 'RUN_UNKNOWN' | 'RUN_ENDED' | 'RUN_NOT_OWNED'; message: string } {
  if (events.length === 0) return { code: 'RUN_UNKNOWN', message: runUnknownMessage(runId) };
  const last = events[events.length - 1].type;
  if (isTerminalRunEvent(last) && !(action === 'resume' && last === 'DeploymentStopped')) {
    // How to go on: a stopped run resumes where it stopped; a failed one reruns what failed.
    const retry = !retryHint
      ? ''
      : last === 'DeploymentStopped'
        ? `; granule resume ${runId} goes on where it stopped (granule retry ${runId} --all-unfinished runs the rest in a new run)`
        : last === 'DeploymentFailed'
          ? `; granule retry ${runId} reruns its failed tasks in a new run`
          : '';
    return {
      code: 'RUN_ENDED',
      message: `run ${runId} has ended (${last}): there is nothing to ${action}${action === 'resume' ? ' (only a stopped run can be resumed)' : ''}${retry}`,
    };
  }
  return { code: 'RUN_NOT_OWNED', message: `run ${runId} is driven by another orchestrator` };
}
