import { RunError } from './run.errors';

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

/**
 * Refuses, at `at`, the resume of run `runId` stopped at `stoppedAt` once its window is past
 * (`RUN_RESUME_WINDOW_CLOSED`, naming the stop, the window's end and what to do instead). The
 * one check of every run kind's decider.
 */
export function assertResumeWindowOpen(runId: string, stoppedAt: string, at: string): void {
  if (Date.parse(at) - Date.parse(stoppedAt) <= RESUME_WINDOW_MS) return;
  throw new RunError(
    'RUN_RESUME_WINDOW_CLOSED',
    `run ${runId} was stopped at ${stoppedAt} and could be resumed until ${resumeWindowEnd(stoppedAt)} ` +
      `(${RESUME_WINDOW_DAYS} days): its plan is stale and its packages may be gone; start a new deployment`,
  );
}
