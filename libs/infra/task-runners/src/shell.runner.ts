import { runWithRetries } from './run-process';
import { finished, workingDir, type AttemptState } from './attempt-state';
import { skippedInCheck, withCheck } from './check-mode';
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
  const checkSafe = p.boolean('check_safe', false);
  p.check();
  const cwd = await workingDir(state, 'shell', cwdParam);
  if (state.exec.check) {
    if (!checkSafe) return skippedInCheck(state, 'shell task not marked check_safe');
    // A check-safe command changes nothing: it runs as in a deployment; exit 2 says it found
    // something a deployment would change (as puppet's detailed exit codes do).
    const outcome = await runWithRetries(
      { command: '/bin/bash', args: ['-c', cmd], cwd, env: { ...state.baseEnv, ...env } },
      { label: 'shell command', timeoutSec, retries, intervalSec, isSuccess: (code) => code === 0 || code === 2 },
      state,
      state.startedAt,
    );
    return outcome.exitCode === 2
      ? withCheck(state, outcome, 'would_change', 'check-safe command exited 2')
      : withCheck(state, outcome, 'no_change', 'check-safe command exited 0');
  }
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
