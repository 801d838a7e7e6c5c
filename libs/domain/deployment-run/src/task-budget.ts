import type { TaskType } from '@granule/task-model';

/** Defaults the agent applies when a task does not set them (astute's). */
export const TASK_DEFAULTS: Record<string, { timeout: number; retries: number; interval: number }> = {
  shell: { timeout: 300, retries: 2, interval: 2 },
  puppet: { timeout: 5400, retries: 0, interval: 0 },
  sync: { timeout: 300, retries: 2, interval: 2 },
  upload_file: { timeout: 300, retries: 0, interval: 0 },
  copy_files: { timeout: 300, retries: 0, interval: 0 },
  reboot: { timeout: 300, retries: 0, interval: 0 },
};

/** Seconds the agent may need beyond its own limits (start-up, reporting). */
export const BUDGET_GRACE_SECONDS = 30;

const num = (v: unknown, fallback: number): number =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : fallback;

/**
 * How long the orchestrator waits for a dispatched task before it declares it timed out: every
 * attempt's timeout, the pauses between attempts, and a grace period. The agent enforces the
 * per-attempt timeout itself; this is the watchdog for an agent that stops answering.
 */
export function taskBudgetSeconds(type: TaskType, parameters: Record<string, unknown>): number {
  const d = TASK_DEFAULTS[type] ?? { timeout: 300, retries: 0, interval: 0 };
  const timeout = num(parameters.timeout, d.timeout) || d.timeout;
  const retries = num(parameters.retries, d.retries);
  const interval = num(parameters.interval, d.interval);
  return timeout * (retries + 1) + retries * interval + BUDGET_GRACE_SECONDS;
}
