import { mkdir, readFile, rm } from 'node:fs/promises';
import { CHECK_DIFF_LIMIT_BYTES } from '@granule/run-events';
import { withCheck } from './check-mode';
import * as path from 'node:path';
import { runWithRetries } from './run-process';
import { workingDir, type AttemptState } from './attempt-state';
import { ParameterReader } from './task-parameters';
import { PUPPET_DEFAULTS, SHELL_DEFAULTS, type TaskOutcome } from './task-runner.types';

const PUPPET_EXIT_MEANING: Record<number, string> = {
  1: 'exit code 1 (the catalog could not be compiled or applied)',
  4: 'exit code 4 (some resources failed)',
  6: 'exit code 6 (some resources changed and some failed)',
};

/** Keeps a node uid usable as one path segment. */
function pathSegment(value: string): string {
  return value.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_') || '_';
}

/** Where puppet keeps its state for one node: `<stateDir>/puppet/<nodeUid>`. */
export function puppetStateDir(stateDir: string, nodeUid: string): string {
  return path.join(stateDir, 'puppet', pathSegment(nodeUid));
}

/**
 * The `puppet apply` argument list: detailed exit codes, all state under `puppetHome` (so the run
 * needs no root and agents on one host do not share locks or caches), `--noop` on request
 * (`--show_diff` too with `showDiff`: file changes are printed as diffs).
 */
export function puppetApplyArgs(
  manifest: string,
  modulePath: string | undefined,
  puppetHome: string,
  noop: boolean,
  showDiff = false,
): string[] {
  return [
    'apply',
    '--detailed-exitcodes',
    '--color=false',
    `--vardir=${path.join(puppetHome, 'var')}`,
    `--confdir=${path.join(puppetHome, 'conf')}`,
    `--codedir=${path.join(puppetHome, 'code')}`,
    `--logdir=${path.join(puppetHome, 'log')}`,
    `--rundir=${path.join(puppetHome, 'run')}`,
    ...(modulePath ? [`--modulepath=${modulePath}`] : []),
    ...(noop ? ['--noop'] : []),
    ...(noop && showDiff ? ['--show_diff'] : []),
    manifest,
  ];
}

/**
 * puppet: `puppet apply --detailed-exitcodes [--modulepath <puppet_modules>] <puppet_manifest>`.
 * Exit 0 (nothing changed) and 2 (changes applied) succeed; anything else fails.
 */
export async function runPuppetTask(state: AttemptState): Promise<TaskOutcome> {
  const p = new ParameterReader('puppet', state.exec.parameters);
  const manifest = p.requiredString('puppet_manifest');
  const modules = p.optionalString('puppet_modules');
  const cwdParam = p.optionalString('cwd');
  const env = p.env('env');
  const timeoutSec = p.seconds('timeout', PUPPET_DEFAULTS.timeout);
  const retries = p.count('retries', PUPPET_DEFAULTS.retries);
  const intervalSec = p.seconds('interval', SHELL_DEFAULTS.interval);
  p.check();
  const cwd = await workingDir(state, 'puppet', cwdParam);
  const home = puppetStateDir(state.stateDir, state.exec.nodeUid);
  await mkdir(home, { recursive: true, mode: 0o700 });
  const modulePath = modules
    ?.split(':')
    .filter((m) => m !== '')
    .map((m) => path.resolve(cwd, m))
    .join(':');
  const check = state.exec.check === true;
  const args = puppetApplyArgs(
    path.resolve(cwd, manifest),
    modulePath,
    home,
    state.exec.noop === true || check,
    // Not for a task with secrets: its output (the task log) would show the files' old contents.
    check && state.exec.diff === true && !state.exec.secrets?.length,
  );
  // Check mode: `puppet apply --noop` exits 0 whether or not it would change something (puppet
  // 7), so the verdict is read from the run report it leaves in its own state dir.
  const report = path.join(home, 'var', 'state', 'last_run_report.yaml');
  if (check) {
    await rm(report, { force: true });
    state.output.captureStream('stdout', CHECK_DIFF_LIMIT_BYTES * 2);
  }
  const outcome = await runWithRetries(
    { command: state.puppetBin, args, cwd, env: { ...state.baseEnv, HOME: home, ...env } },
    {
      label: 'puppet apply',
      timeoutSec,
      retries,
      intervalSec,
      isSuccess: (code) => code === 0 || code === 2,
      describeExit: (code) => PUPPET_EXIT_MEANING[code] ?? `exit code ${code}`,
    },
    state,
    state.startedAt,
  );
  if (!check) return outcome;
  const pending = await noopPending(report);
  const changes = state.output
    .captured()
    .text.split('\n')
    .filter((l) => !/^Notice: (Compiled|Applied) catalog/.test(l))
    .join('\n');
  if (pending === undefined)
    return withCheck(state, outcome, 'unknown', `puppet --noop left no readable run report (${report})`, changes);
  return pending
    ? withCheck(state, outcome, 'would_change', 'puppet --noop reports pending changes', changes)
    : withCheck(state, outcome, 'no_change', 'puppet --noop reports no pending change');
}

/** `noop_pending` of a puppet run report (true: a real run would change something), or undefined. */
async function noopPending(reportFile: string): Promise<boolean | undefined> {
  const text = await readFile(reportFile, 'utf8').catch(() => undefined);
  const m = text && /^noop_pending: (true|false)$/m.exec(text);
  return m ? m[1] === 'true' : undefined;
}
