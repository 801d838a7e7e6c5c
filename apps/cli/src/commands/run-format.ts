import type { ExpiredCommandEntry, RunEventEntry, RunSummary } from '@granule/contracts';
import type { CommandExpiry } from '@granule/run-events';
import { toTable } from '../output';
import { logsCommandFor } from './task-log-format';

/** One line per event: `HH:MM:SS  #version  Type  details`. */
export function describeEvent(entry: RunEventEntry | ExpiredCommandEntry): string {
  const time = entry.at.slice(11, 19);
  // A stop or resume that named the run and expired: not one of the run's events (no number).
  if ('stream' in entry)
    return `${time}  ${'-'.padEnd(5)} ${entry.event.type.padEnd(24)} ${expiredDetail(entry.event.data)}`;
  const e = entry.event;
  let detail = '';
  switch (e.type) {
    case 'DeploymentRequested':
      detail = `${e.data.envId ? `env ${e.data.envId}` : 'inline plan'}, graph ${e.data.graph}${e.data.dryRun ? ', dry run' : ''}${e.data.noop ? ', noop' : ''}${e.data.check ? `, check${e.data.diff ? ' with diff' : ''}` : ''}${e.data.retryOf ? `, retry of ${e.data.retryOf.runId}` : ''}`;
      break;
    case 'PlanAccepted':
      detail = `${e.data.tasks} tasks on ${e.data.nodes.length} nodes (plan ${e.data.planId})`;
      break;
    case 'TaskDispatched':
      detail = `${e.data.key}${e.data.attempt > 1 ? ` (attempt ${e.data.attempt})` : ''}`;
      break;
    case 'TaskStarted':
      detail = e.data.key;
      break;
    case 'TaskSkipped':
      detail = e.data.reason === 'check' ? `${e.data.key}: not run in a check (${e.data.detail ?? ''})` : e.data.key;
      break;
    case 'TaskSucceeded':
      detail = `${e.data.key} in ${(e.data.durationMs / 1000).toFixed(1)} s${e.data.check ? `: ${e.data.check.verdict.replace('_', ' ')}` : ''}`;
      break;
    case 'TaskFailed':
      detail = `${e.data.key}: ${e.data.error ?? `exit ${e.data.exitCode}`}${e.data.outputTail ? ` — ${lastLine(e.data.outputTail)}` : ''}`;
      break;
    case 'TaskTimedOut':
      detail = e.data.key;
      break;
    case 'TaskAttemptFailed':
      detail = `${e.data.key}: try ${e.data.try} of ${e.data.of} failed (${e.data.reason}); the agent runs it again`;
      break;
    case 'NodeFailed':
      detail = `${e.data.node} (${e.data.reason}${e.data.task ? `: ${e.data.task}` : ''})`;
      break;
    case 'GroupToleranceExceeded':
      detail = `${e.data.group}: ${e.data.failed.length} failed, ${e.data.tolerance} allowed`;
      break;
    case 'DeploymentStopRequested':
      detail = `${e.data.detail}${e.data.requestedBy ? ` (${e.data.requestedBy})` : ''}`;
      break;
    case 'DeploymentResumed':
      detail = e.data.requestedBy ? `by ${e.data.requestedBy}` : '';
      break;
    case 'DeploymentRefused':
      detail = e.data.reason;
      break;
    case 'DeploymentQueued':
      detail = queuedDetail(e.data.heldBy);
      break;
    case 'StrategyAccepted':
      detail = `groups in order: ${e.data.plan.order.join(', ')}`;
      break;
    case 'StrategyPhaseStarted':
      detail = `${e.data.phase} ${e.data.group} on ${e.data.nodes.join(', ')} (${e.data.graph} graph, run ${e.data.childRunId})`;
      break;
    case 'StrategyPhaseFinished':
      detail = `${e.data.phase} ${e.data.group}: ${e.data.succeeded.length} ok${e.data.failed.length ? `, failed: ${e.data.failed.join(', ')}` : ''}${e.data.note ? ` (${e.data.note})` : ''}`;
      break;
    case 'StrategyReported':
      detail = `outcome ${e.data.outcome}`;
      break;
    case 'DeploymentFailed':
      detail = e.data.reason;
      break;
    case 'DeploymentExpired':
      detail = `the ${e.data.command} command waited ${e.data.ttlSeconds} s for an orchestrator; nothing ran`;
      break;
    case 'DeploymentSucceeded':
      detail = e.data.failedNodes.length
        ? `within fault tolerance: ${plural(e.data.failedNodes.length, 'node')} failed (${e.data.failedNodes.join(', ')})`
        : '';
      break;
    case 'DeploymentStopped':
      detail = e.data.failedNodes.length ? `failed nodes: ${e.data.failedNodes.join(', ')}` : '';
      break;
    default:
      detail = '';
  }
  return `${time}  #${String(entry.version).padEnd(4)} ${e.type.padEnd(24)} ${detail}`.trimEnd();
}

/** What an expired stop or resume was: `StopDeployment by alice waited 120 s for an orchestrator; never acted on`. */
function expiredDetail(c: CommandExpiry & { requestedBy?: string }): string {
  return `${c.command}${c.requestedBy ? ` by ${c.requestedBy}` : ''} waited ${c.ttlSeconds} s for an orchestrator; never acted on (command ${c.commandId})`;
}

/** `waits for n1, n2 (run A); n3 (run B); starts when they are free` (ADR 0024). */
export function queuedDetail(heldBy: readonly { node: string; runId: string }[]): string {
  const byRun = new Map<string, string[]>();
  for (const { node, runId } of heldBy) byRun.set(runId, [...(byRun.get(runId) ?? []), node]);
  const held = [...byRun]
    .map(
      ([runId, nodes]) =>
        `${nodes.slice(0, 10).join(', ')}${nodes.length > 10 ? ` and ${nodes.length - 10} more` : ''} (run ${runId})`,
    )
    .join('; ');
  return `waits for nodes held by ${held}; goes on when they are free`;
}

function lastLine(text: string): string {
  const lines = text.trim().split('\n');
  return lines[lines.length - 1].slice(0, 160);
}

/** Ansible-style recap: a line per node with counts by outcome, then the failures (and the strategy's groups). */
export function renderRecap(summary: RunSummary): string {
  const strategy = summary.strategy
    ? `\nSTRATEGY outcome: ${summary.strategy.outcome ?? 'in progress'}\n` +
      toTable(
        summary.strategy.groups.map((g) => ({
          group: g.name,
          critical: g.critical,
          status: g.status,
          stage: g.stage,
          failures: g.failures.map((f) => `${f.criteria}: needed ${f.needed}, got ${f.actual}`).join('; '),
        })),
        ['group', 'critical', 'status', 'stage', 'failures'],
      )
    : '';
  const rows = Object.entries(summary.nodes)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([node, c]) => ({
      node,
      ok: c.succeeded,
      failed: c.failed + c.timed_out,
      skipped: c.skipped,
      dep_failed: c.dep_failed,
      pending: c.pending + c.dispatched + c.running,
      status: c.failedNode ? 'FAILED' : c.pending + c.dispatched + c.running > 0 ? 'unfinished' : 'ok',
    }));
  // Each failure with the last lines of its output and the command that prints all of it.
  const failures = summary.failures.map(
    (f) =>
      `  ${f.key}: ${f.status}${f.error ? ` (${f.error})` : ''}\n` +
      lastLines(f.outputTail ?? '', RECAP_OUTPUT_LINES)
        .map((l) => `    | ${l}\n`)
        .join('') +
      `    full output: ${logsCommandFor(summary.runId, f.key)}`,
  );
  const tries = summary.failedTries
    ? `${plural(summary.failedTries, 'failed try', 'failed tries')} run again (${plural(summary.retriedTasks ?? 0, 'task')}: granule runs tasks ${summary.runId})\n`
    : '';
  // A success that fault tolerance carried says so: failed nodes are not a plain success.
  const failedNodes = Object.entries(summary.nodes)
    .filter(([, c]) => c.failedNode)
    .map(([uid]) => uid)
    .sort();
  const phase =
    summary.phase === 'succeeded' && failedNodes.length > 0
      ? `succeeded within fault tolerance (${plural(failedNodes.length, 'node')} failed: ${failedNodes.join(', ')})`
      : summary.phase;
  return (
    `RECAP run ${summary.runId}${runKindSuffix(summary)}: ${phase}${summary.reason ? ` — ${summary.reason}` : ''}\n` +
    (summary.requestedBy ? `requested by ${summary.requestedBy}\n` : '') +
    toTable(rows, ['node', 'ok', 'failed', 'skipped', 'dep_failed', 'pending', 'status']) +
    (failures.length ? `failures:\n${failures.join('\n')}\n` : '') +
    tries +
    (summary.expiredCommands ?? []).map((c) => `expired: ${c.storedAt.slice(11, 19)} ${expiredDetail(c)}\n`).join('') +
    strategy
  );
}

function plural(n: number, noun: string, nouns = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : nouns}`;
}

/** Lines of a failed task's output the recap shows. */
export const RECAP_OUTPUT_LINES = 5;

/** The last `n` non-empty lines of `text`, each at most 160 characters. */
function lastLines(text: string, n: number): string[] {
  return text
    .split('\n')
    .map((l) => l.replace(/\r$/, ''))
    .filter((l) => l.trim() !== '')
    .slice(-n)
    .map((l) => l.slice(0, 160));
}

/**
 * How a run that changed nothing on the hosts is marked where runs are listed or recapped:
 * ` (check)`, ` (dry run)` (planned, nothing sent), ` (noop)`; nothing for a deployment.
 */
export function runKindSuffix(run: { check?: boolean; dryRun?: boolean; noop?: boolean }): string {
  return run.check ? ' (check)' : run.dryRun ? ' (dry run)' : run.noop ? ' (noop)' : '';
}
