/**
 * Check mode (ADR 0031): a run that changes nothing on the hosts and says, per task, whether a
 * real deployment would change something.
 */

/** What a task that ran in check mode found: it would change something, nothing, or it cannot tell. */
export type CheckVerdict = 'would_change' | 'no_change' | 'unknown';

/** What an agent reports of a task it handled in check mode (`TaskProgressMessage.check`). */
export interface TaskCheckReport {
  /** `skipped`: the task did not run (a shell task not marked `check_safe`, a reboot). */
  verdict: CheckVerdict | 'skipped';
  /** How the verdict was reached, or why the task was skipped (one line). */
  reason?: string;
  /**
   * With `--diff`: the difference the task would make (a unified diff for file tasks, the changes
   * puppet or rsync list), at most `CHECK_DIFF_LIMIT_BYTES`, a cut marked by `CHECK_DIFF_CUT_MARK`.
   */
  diff?: string;
}

/**
 * Largest diff kept per task, in UTF-8 bytes: it travels in the task's event, and a page of
 * `runs.events` must stay under NATS's 1 MiB message limit.
 */
export const CHECK_DIFF_LIMIT_BYTES = 16 * 1024;

export const CHECK_DIFF_CUT_MARK = '\n[granule] diff cut here: it is longer than the kept 16 KiB\n';

/** `text` cut to `limitBytes` UTF-8 bytes (on a line end when there is one), the cut marked. */
export function boundDiff(text: string, limitBytes = CHECK_DIFF_LIMIT_BYTES): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= limitBytes) return text;
  const room = Math.max(0, limitBytes - new TextEncoder().encode(CHECK_DIFF_CUT_MARK).length);
  // Decoding a byte prefix may leave half a character: drop it.
  let kept = new TextDecoder().decode(bytes.subarray(0, room)).replace(/\uFFFD$/, '');
  const lineEnd = kept.lastIndexOf('\n');
  if (lineEnd > 0) kept = kept.slice(0, lineEnd);
  return kept + CHECK_DIFF_CUT_MARK;
}

const CHECK_VERDICTS: readonly string[] = ['would_change', 'no_change', 'unknown', 'skipped'];

/** The check report in an untrusted message, or undefined when it is not one (extra fields dropped, the diff bounded). */
export function checkReportOf(value: unknown): TaskCheckReport | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v.verdict !== 'string' || !CHECK_VERDICTS.includes(v.verdict)) return undefined;
  return {
    verdict: v.verdict as TaskCheckReport['verdict'],
    ...(typeof v.reason === 'string' && v.reason !== '' ? { reason: v.reason.slice(0, 1000) } : {}),
    ...(typeof v.diff === 'string' && v.diff !== '' ? { diff: boundDiff(v.diff) } : {}),
  };
}
