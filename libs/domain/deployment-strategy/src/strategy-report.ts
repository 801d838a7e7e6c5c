import type { GroupStage, GroupMachineState } from './group-machine';
import type { GroupFailure, GroupStatus, NodeStatus, StrategyOutcome, StrategyPhase } from './strategy.types';

/** One line of the group table. */
export interface GroupReportRow {
  name: string;
  critical: boolean;
  status: GroupStatus;
  /** The last phase the group started. */
  stage: GroupStage;
  /** Number of nodes the group selects. */
  nodes: number;
  failures: GroupFailure[];
}

/** One line of the seed-style processing log, e.g. `deploy ntp-node: FAILED, due to prepare failure`. */
export interface StepReportLine {
  phase: StrategyPhase;
  group: string;
  /** SUCCESS | FAILED | FAILED, due to dependency | FAILED, due to prepare failure | PENDING | NOT_STARTED */
  result: string;
}

/** The end-of-run report (seed 004, "Process" step 3): groups, nodes by status, processing log. */
export interface StrategyReport {
  /** Null while the run is not done. */
  outcome: StrategyOutcome | null;
  groups: GroupReportRow[];
  /** Uids by status, each list in node-list order. */
  nodes: Record<NodeStatus, string[]>;
  steps: StepReportLine[];
}

/** Summarises a run state (finished or not) for logs, the CLI and the API. */
export function buildReport(state: GroupMachineState): StrategyReport {
  const nodes: Record<NodeStatus, string[]> = { deployed: [], prepared: [], failed: [], not_started: [] };
  for (const uid of state.nodeOrder) nodes[state.nodes[uid]].push(uid);
  const steps: StepReportLine[] = [];
  for (const g of state.groups) {
    const byDependency = g.failures.some((f) => f.criteria === 'depends_on');
    for (const phase of ['prepare', 'deploy'] as const) {
      const step = state.steps.find((s) => s.group === g.name && s.phase === phase);
      let result: string;
      if (byDependency) result = 'FAILED, due to dependency';
      else if (step) result = step.failures.length > 0 ? 'FAILED' : 'SUCCESS';
      else if (state.pending?.group === g.name && state.pending.kind === phase) result = 'PENDING';
      else if (phase === 'deploy' && g.status === 'FAILED') result = 'FAILED, due to prepare failure';
      else result = 'NOT_STARTED';
      steps.push({ phase, group: g.name, result });
    }
  }
  return {
    outcome: state.outcome,
    groups: state.groups.map((g) => ({
      name: g.name,
      critical: g.critical,
      status: g.status,
      stage: g.stage,
      nodes: g.nodes.length,
      failures: g.failures,
    })),
    nodes,
    steps,
  };
}

const OUTCOME_TEXT: Record<StrategyOutcome, string> = {
  success: 'success',
  partial: 'success with some nodes/groups failed',
  failed: 'failed due to critical group failed',
};

/** Renders a report's processing log the way seed 004 draws it (`Start`, one line per phase, `Finish (...)`). */
export function formatProcessingLog(report: StrategyReport): string {
  const width = Math.max(0, ...report.steps.map((s) => `${s.phase} ${s.group}`.length));
  const lines = ['Start'];
  report.steps.forEach((s, i) => {
    if (i > 0 && s.phase === 'prepare') lines.push('V');
    lines.push(`| ${`${s.phase} ${s.group}`.padEnd(width)}  <${s.result}>`);
  });
  lines.push(report.outcome ? `Finish (${OUTCOME_TEXT[report.outcome]})` : 'Not finished');
  return `${lines.join('\n')}\n`;
}
