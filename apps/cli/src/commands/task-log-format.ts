import { cutMessage, type RunTasksReply, type TaskLogLine } from '@granule/contracts';
import { toTable } from '../output';

/** `1.2s`, `3m04s`, `2h05m`: a task's duration as the per-task table shows it. */
export function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return '';
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** The per-task table of `runs tasks` (a strategy run's rows name their phase run). */
export function renderTaskTable(reply: RunTasksReply): string {
  const phases = new Set(reply.tasks.map((t) => t.runId)).size > 1 || reply.tasks.some((t) => t.runId !== reply.runId);
  const rows = reply.tasks.map((t) => ({
    ...(phases ? { run: t.runId } : {}),
    task: t.task,
    node: t.node,
    status: t.status,
    tries: t.tries,
    exit: t.exitCode ?? '',
    started: t.startedAt ? t.startedAt.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '',
    duration: formatDuration(t.durationMs),
    error: t.error ?? '',
  }));
  const columns = [
    ...(phases ? ['run'] : []),
    'task',
    'node',
    'status',
    'tries',
    'exit',
    'started',
    'duration',
    ...(rows.some((r) => r.error) ? ['error'] : []),
  ];
  return `run ${reply.runId}: ${reply.phase}, ${reply.tasks.length} task instance${reply.tasks.length === 1 ? '' : 's'}\n${toTable(rows, columns)}`;
}

/**
 * Prints task log lines as text: a header names the task, node and try whenever the source
 * changes (as `tail` does for several files), `timestamps` puts the time the agent read each line
 * in front of it, and a cut says how much was left out.
 */
export class TaskLogTextPrinter {
  private source = '';

  constructor(private readonly timestamps = false) {}

  render(line: TaskLogLine): string {
    const source = `${line.task} on ${line.node}, try ${line.try}`;
    const header = source === this.source ? '' : `==> ${source} <==\n`;
    this.source = source;
    if (line.cut) return `${header}--- ${cutMessage(line.cut)} ---\n`;
    return `${header}${this.timestamps ? `${line.at} ` : ''}${line.line}\n`;
  }
}

/** One line of `granule logs -o json`: a JSON object per line of output. */
export function jsonLogLine(line: TaskLogLine): string {
  return `${JSON.stringify(line)}\n`;
}

/** The command that prints the rest of a failed task's output (the recap names it). */
export function logsCommandFor(runId: string, key: string): string {
  const at = key.lastIndexOf('@');
  return at < 0
    ? `granule logs ${runId} --task ${key}`
    : `granule logs ${runId} --node ${key.slice(at + 1)} --task ${key.slice(0, at)}`;
}
