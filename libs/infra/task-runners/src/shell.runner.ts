import { runWithRetries } from './run-process';
import { finished, workingDir, type AttemptState } from './attempt-state';
import { ParameterReader } from './task-parameters';
import { SHELL_DEFAULTS, type TaskOutcome } from './task-runner.types';

/**
 * shell: `cmd` by `/bin/bash -c` in `cwd` (relative to the root dir) with `env` added; each
 * attempt limited by `timeout` seconds, `retries` more attempts `interval` seconds apart.
 */
export async function runShellTask(state: AttemptState): Promise<TaskOutcome> {
  const p = new ParameterReader('shell', state.exec.parameters);
  const cmd = p.requiredString('cmd');
  const cwdParam = p.optionalString('cwd');
  const env = p.env('env');
  const timeoutSec = p.seconds('timeout', SHELL_DEFAULTS.timeout);
  const retries = p.count('retries', SHELL_DEFAULTS.retries);
  const intervalSec = p.seconds('interval', SHELL_DEFAULTS.interval);
  p.check();
  const cwd = await workingDir(state, 'shell', cwdParam);
  if (state.exec.noop) {
    state.output.write('stdout', `would run: ${cmd} (cwd ${cwd})\n`);
    return finished(state, { status: 'succeeded', exitCode: 0, attempts: 0 });
  }
  return runWithRetries(
    { command: '/bin/bash', args: ['-c', cmd], cwd, env: { ...state.baseEnv, ...env } },
    { label: 'shell command', timeoutSec, retries, intervalSec, isSuccess: (code) => code === 0 },
    state,
    state.startedAt,
  );
}
