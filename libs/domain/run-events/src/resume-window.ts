/**
 * How long a stopped run may be resumed: after it, a resume is refused and the run no longer
 * keeps its plan's package files in the control plane (ADR 0026). A run stopped a month ago
 * would go on from a plan made against what the environment was then; a new deployment plans
 * against what it is now. One constant for the orchestrator (which refuses) and config-store
 * (which deletes), so the two cannot disagree.
 */
export const RESUME_WINDOW_DAYS = 30;

const RESUME_WINDOW_MS = RESUME_WINDOW_DAYS * 86_400_000;

/** When a run stopped at `stoppedAt` can no longer be resumed (ISO time). */
export function resumeWindowEnd(stoppedAt: string): string {
  return new Date(Date.parse(stoppedAt) + RESUME_WINDOW_MS).toISOString();
}

/** Whether, at `at`, a run stopped at `stoppedAt` is past its resume window. */
export function resumeWindowClosed(stoppedAt: string, at: string): boolean {
  return Date.parse(at) - Date.parse(stoppedAt) > RESUME_WINDOW_MS;
}

/** The refusal's message: when the run stopped, the window, and what to do instead. */
export function resumeWindowClosedMessage(runId: string, stoppedAt: string): string {
  return (
    `run ${runId} was stopped at ${stoppedAt} and could be resumed until ${resumeWindowEnd(stoppedAt)} ` +
    `(${RESUME_WINDOW_DAYS} days): its plan is stale and its packages may be gone; start a new deployment`
  );
}
