import { readFile, stat } from 'node:fs/promises';
import { boundDiff, type CheckVerdict, type TaskCheckReport } from '@granule/run-events';
import { finished, type AttemptState } from './attempt-state';
import { formatMode } from './task-parameters';
import { unifiedDiff } from './text-diff';
import type { TaskOutcome } from './task-runner.types';

// Check mode (ADR 0031): runners change nothing and say whether a real run would.

/** Files larger than this are compared but not diffed. */
const MAX_DIFF_FILE_BYTES = 1024 * 1024;

/** A succeeded outcome of a check: the verdict, how it was reached, and the diff when asked for. */
export function checked(
  state: AttemptState,
  verdict: CheckVerdict | 'skipped',
  reason: string,
  diff?: string,
  fields: Partial<TaskOutcome> = {},
): TaskOutcome {
  state.output.write('stdout', `[granule] check: ${verdict.replace('_', ' ')}: ${reason}\n`);
  const check: TaskCheckReport = { verdict, reason, ...diffField(state, diff) };
  return finished(state, { status: 'succeeded', exitCode: 0, attempts: 0, ...fields, check });
}

/** A check outcome for a task that did not run (`reason` says why). */
export function skippedInCheck(state: AttemptState, reason: string): TaskOutcome {
  return checked(state, 'skipped', reason, undefined, { exitCode: null });
}

/** The check report added to a process-backed outcome that succeeded; a failed one stays as it is. */
export function withCheck(
  state: AttemptState,
  outcome: TaskOutcome,
  verdict: CheckVerdict,
  reason: string,
  diff?: string,
): TaskOutcome {
  if (outcome.status !== 'succeeded') return outcome;
  state.output.write('stdout', `[granule] check: ${verdict.replace('_', ' ')}: ${reason}\n`);
  state.output.flush();
  return {
    ...outcome,
    outputTail: state.output.tail(),
    check: { verdict, reason, ...diffField(state, diff) },
  };
}

/** Said instead of the diff of a task with secrets. */
export const SECRET_DIFF_NOTE =
  '[granule] diff not shown: the task has secrets, and what is on the host may hold old ones\n';

/**
 * The diff, when asked for: bounded, the task's secrets masked. A task with secrets shows none:
 * masking hides the values it sends, not an older secret still in the file on the host.
 */
function diffField(state: AttemptState, diff: string | undefined): Pick<TaskCheckReport, 'diff'> {
  if (!state.exec.diff || !diff) return {};
  if (state.exec.secrets?.length) return { diff: SECRET_DIFF_NOTE };
  return { diff: boundDiff(state.output.maskText(diff)) };
}

const isBinary = (b: Buffer): boolean => b.subarray(0, 8000).includes(0);

/** How a file on the host compares with what a file task would write there. */
export interface FileComparison {
  changed: boolean;
  /** One line: what would change, or that the file is as wanted. */
  summary: string;
  /** Unified diff of the content (empty when only the mode differs), a note for binary or large files. */
  diff: string;
}

/**
 * Compares `target` with the content and mode a file task would give it (`wanted`: the data, or
 * a copy's source as read); reads only. A missing target would be created.
 */
export async function compareFile(target: string, wanted: Buffer, mode: number): Promise<FileComparison> {
  const info = await stat(target).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (!info) {
    const text = wanted.length > MAX_DIFF_FILE_BYTES || isBinary(wanted) ? '' : wanted.toString('utf8');
    return {
      changed: true,
      summary: `would create ${target} (${wanted.length} bytes, mode ${formatMode(mode)})`,
      diff:
        text === '' && wanted.length > 0
          ? `new file ${target}: binary or large, not shown\n`
          : unifiedDiff('', text, '/dev/null', target),
    };
  }
  const current = info.size === wanted.length ? await readFile(target) : undefined;
  const sameContent = current !== undefined && current.equals(wanted);
  const currentMode = info.mode & 0o7777;
  const changes = [
    ...(sameContent ? [] : ['content differs']),
    ...(currentMode === mode ? [] : [`mode ${formatMode(currentMode)} -> ${formatMode(mode)}`]),
  ];
  if (changes.length === 0) return { changed: false, summary: `${target} is as wanted`, diff: '' };
  let diff = currentMode === mode ? '' : `mode ${formatMode(currentMode)} -> ${formatMode(mode)} ${target}\n`;
  if (!sameContent) {
    const old = current ?? (info.size <= MAX_DIFF_FILE_BYTES ? await readFile(target) : undefined);
    diff +=
      old === undefined || wanted.length > MAX_DIFF_FILE_BYTES || isBinary(old) || isBinary(wanted)
        ? `files differ: ${target} (binary or large, not shown)\n`
        : unifiedDiff(old.toString('utf8'), wanted.toString('utf8'), `${target} (on the host)`, `${target} (wanted)`);
  }
  return { changed: true, summary: `would change ${target}: ${changes.join(', ')}`, diff };
}
