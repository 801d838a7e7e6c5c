import { runWithRetries } from './run-process';
import { finished, type AttemptState } from './attempt-state';
import { skippedInCheck } from './check-mode';
import { ParameterReader } from './task-parameters';
import { REBOOT_COMMAND_TIMEOUT_SEC, REBOOT_DEFAULTS, type TaskOutcome } from './task-runner.types';

/**
 * reboot: runs the context's reboot command (by `/bin/bash -c`, limited to
 * `REBOOT_COMMAND_TIMEOUT_SEC`) and returns with `rebootRequested: true`. The task is not done:
 * the agent keeps it pending (see `isRebootPending`) and completes it when it re-registers after
 * the reboot, or fails it after `rebootTimeoutSec` (`parameters.timeout`, default 300).
 */
export async function runRebootTask(state: AttemptState): Promise<TaskOutcome> {
  const p = new ParameterReader('reboot', state.exec.parameters);
  const rebootTimeoutSec = p.seconds('timeout', REBOOT_DEFAULTS.timeout);
  p.check();
  if (state.exec.check) return skippedInCheck(state, 'a check run never reboots');
  if (state.exec.noop) {
    state.output.write('stdout', `would reboot with: ${state.rebootCommand}\n`);
    return finished(state, { status: 'succeeded', exitCode: 0, attempts: 0 });
  }
  const outcome = await runWithRetries(
    { command: '/bin/bash', args: ['-c', state.rebootCommand], cwd: state.rootDir, env: state.baseEnv },
    {
      label: 'reboot command',
      timeoutSec: REBOOT_COMMAND_TIMEOUT_SEC,
      retries: 0,
      intervalSec: 0,
      isSuccess: (code) => code === 0,
    },
    state,
    state.startedAt,
  );
  return { ...outcome, rebootRequested: true, rebootTimeoutSec };
}
