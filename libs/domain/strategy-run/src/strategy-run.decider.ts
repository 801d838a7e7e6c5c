import { foldWith } from '@granule/core';
import type { Decider } from '@granule/core';
import { applyResult, buildReport, createGroupMachine, nextAction } from '@granule/deployment-strategy';
import type { StrategyAction, StrategyPlan, GroupMachineState } from '@granule/deployment-strategy';
import { isTerminalRunEvent, isTerminalRunPhase, assertResumeWindowOpen, RunError } from '@granule/run-events';
import type { DeploymentRequested, RunEvent, RunPhaseName, StrategyAccepted } from '@granule/run-events';

/** Phase runs: prepare runs the release's provisioning graph, deploy its default graph. */
export const PHASE_GRAPHS = { prepare: 'provisioning', deploy: 'default' } as const;

/**
 * How a phase run ended, as the strategy run needs it: read from the phase run's events
 * (`phaseRunOutcome`) or from its driver's state when it ends. `absent`: the phase was recorded
 * as started but its run was never created (the orchestrator stopped in between).
 */
export interface PhaseRunOutcome {
  end: 'succeeded' | 'failed' | 'stopped' | 'refused' | 'absent';
  /** Nodes the phase run failed (NodeFailed). */
  failedNodes: string[];
  /** A refusal's code and reason. */
  refusalCode?: string;
  reason?: string;
}

/**
 * A strategy run (seed 004): a process manager over phase runs. Its groups go one at a time;
 * each phase is a run of its own (the child run) on the group's nodes, and the Airship state
 * machine (`@granule/deployment-strategy`) judges each group by its success criteria.
 */
export interface StrategyRun {
  runId: string;
  phase: 'new' | RunPhaseName;
  request?: DeploymentRequested['data'];
  /** The groups resolved against the nodes (StrategyAccepted). */
  plan?: StrategyPlan;
  /** Inline plan inputs the phase runs use (absent when the run plans an environment). */
  inline?: StrategyAccepted['data']['inline'];
  /** Stored inline plan inputs the phase runs use (ADR 0029). */
  inputs?: StrategyAccepted['data']['inputs'];
  /** The group state machine; set once the strategy is accepted. */
  groups?: GroupMachineState;
  /** The phase run being waited for. */
  pending?: { action: StrategyAction; childRunId: string };
  /** Every phase run started, in order. */
  phaseRuns: string[];
  /** Why it was refused or failed. */
  reason?: string;
  /** Why it is stopping or was stopped (the stop's detail); cleared by a resume. */
  stopReason?: string;
  /** When it was stopped (its `DeploymentStopped`); the resume window runs from it. */
  stoppedAt?: string;
}

/** A strategy run whose strategy was accepted: its plan and group machine are set. */
export type AcceptedStrategyRun = StrategyRun & { plan: StrategyPlan; groups: GroupMachineState };

export function isAcceptedStrategyRun(state: StrategyRun): state is AcceptedStrategyRun {
  return state.plan !== undefined && state.groups !== undefined;
}

export type StrategyRunCommand =
  | { type: 'RequestStrategyRun'; request: DeploymentRequested['data'] }
  | {
      type: 'AcceptStrategy';
      plan: StrategyPlan;
      inline?: StrategyAccepted['data']['inline'];
      inputs?: StrategyAccepted['data']['inputs'];
    }
  | { type: 'RefuseStrategy'; code: string; reason: string }
  /** Start the next phase, or end the run when the groups are done (or a stop waits for no phase). */
  | { type: 'Advance'; at: string }
  | { type: 'RecordPhaseEnd'; childRunId: string; outcome: PhaseRunOutcome; at: string }
  /** `requestedBy`: the authenticated operator who asked (recorded in the event). */
  | { type: 'Stop'; at: string; detail: string; requestedBy?: string }
  /** `phaseStoppedAt`: when its pending phase run stopped (the resume window runs from the earlier stop). */
  | { type: 'Resume'; at: string; phaseStoppedAt?: string; requestedBy?: string };

export function initialStrategyRun(runId: string): StrategyRun {
  return { runId, phase: 'new', phaseRuns: [] };
}

export function evolveStrategyRun(state: StrategyRun, event: RunEvent): StrategyRun {
  switch (event.type) {
    case 'DeploymentRequested':
      return { ...state, phase: 'requested', request: event.data };
    case 'StrategyAccepted':
      return {
        ...state,
        phase: 'running',
        plan: event.data.plan,
        ...(event.data.inline ? { inline: event.data.inline } : {}),
        ...(event.data.inputs ? { inputs: event.data.inputs } : {}),
        groups: createGroupMachine(event.data.plan),
      };
    case 'StrategyPhaseStarted':
      return {
        ...state,
        pending: {
          action: { kind: event.data.phase, group: event.data.group, nodes: event.data.nodes },
          childRunId: event.data.childRunId,
        },
        phaseRuns: [...state.phaseRuns, event.data.childRunId],
      };
    case 'StrategyPhaseFinished':
      if (!isAcceptedStrategyRun(state))
        throw new Error(`run ${state.runId}: StrategyPhaseFinished before StrategyAccepted in its events`);
      return {
        ...state,
        groups: applyResult(state.groups, {
          group: event.data.group,
          phase: event.data.phase,
          succeeded: event.data.succeeded,
          failed: event.data.failed,
        }),
        pending: undefined,
      };
    case 'DeploymentStopRequested':
      return { ...state, phase: 'stopping', stopReason: event.data.detail };
    case 'DeploymentResumed':
      return { ...state, phase: 'running', stopReason: undefined };
    case 'DeploymentRefused':
      return { ...state, phase: 'refused', reason: event.data.reason };
    case 'DeploymentSucceeded':
      return { ...state, phase: 'succeeded' };
    case 'DeploymentFailed':
      return { ...state, phase: 'failed', reason: event.data.reason };
    case 'DeploymentStopped':
      return { ...state, phase: 'stopped', stoppedAt: event.data.at };
    case 'DeploymentExpired':
      return { ...state, phase: 'expired' };
    default:
      return state;
  }
}

/** The phase run id of the next phase: `<run>-<step>-<prepare|deploy>`. */
function childRunIdFor(state: AcceptedStrategyRun, action: StrategyAction): string {
  return `${state.runId}-${state.groups.steps.length + 1}-${action.kind}`;
}

function failedNodesOf(state: StrategyRun): string[] {
  return state.groups ? [...buildReport(state.groups).nodes.failed] : [];
}

/** What Advance decides: the next phase, the end of the run, or nothing (a phase runs). */
function advance(state: StrategyRun, at: string): RunEvent[] {
  if (state.pending || !isAcceptedStrategyRun(state)) return [];
  if (state.phase === 'stopping')
    return [{ type: 'DeploymentStopped', data: { at, failedNodes: failedNodesOf(state) } }];
  if (state.phase !== 'running') return [];
  const next = nextAction(state.groups);
  if (next.kind === 'done') {
    const report = buildReport(state.groups);
    const failedNodes = [...report.nodes.failed];
    const critical = report.groups.filter((g) => g.critical && g.status === 'FAILED').map((g) => g.name);
    return [
      { type: 'StrategyReported', data: { outcome: next.outcome, report } },
      next.outcome === 'failed'
        ? {
            type: 'DeploymentFailed',
            data: { at, reason: `critical group(s) failed: ${critical.join(', ')}`, failedNodes },
          }
        : { type: 'DeploymentSucceeded', data: { at, failedNodes, outcome: next.outcome } },
    ];
  }
  return [
    {
      type: 'StrategyPhaseStarted',
      data: {
        group: next.group,
        phase: next.kind,
        nodes: next.nodes,
        childRunId: childRunIdFor(state, next),
        graph: PHASE_GRAPHS[next.kind],
      },
    },
  ];
}

/** Events in order, each seeing the state the previous ones left, then `more` on the state they leave. */
function then(state: StrategyRun, events: RunEvent[], more: (s: StrategyRun) => RunEvent[]): RunEvent[] {
  const after = events.reduce(evolveStrategyRun, state);
  return [...events, ...more(after)];
}

/** The nodes of a finished phase by outcome; a refused prepare phase without a provisioning graph has nothing to do. */
function phaseResult(
  action: StrategyAction,
  outcome: PhaseRunOutcome,
): { succeeded: string[]; failed: string[]; note?: string } {
  const nodes = action.nodes;
  if (outcome.end === 'refused') {
    if (outcome.refusalCode === 'PLAN_UNKNOWN_GRAPH' && action.kind === 'prepare')
      return { succeeded: nodes, failed: [], ...(outcome.reason ? { note: outcome.reason } : {}) };
    return { succeeded: [], failed: nodes, ...(outcome.reason ? { note: outcome.reason } : {}) };
  }
  const failed = new Set(outcome.failedNodes);
  if (outcome.end !== 'succeeded') for (const n of nodes) failed.add(n);
  return { succeeded: nodes.filter((n) => !failed.has(n)), failed: nodes.filter((n) => failed.has(n)) };
}

export function decideStrategyRun(state: StrategyRun, command: StrategyRunCommand): RunEvent[] {
  switch (command.type) {
    case 'RequestStrategyRun':
      if (state.phase !== 'new') throw new RunError('RUN_EXISTS', `run ${state.runId} already exists`);
      return [{ type: 'DeploymentRequested', data: command.request }];

    case 'AcceptStrategy':
      if (state.phase !== 'requested') return [];
      return [
        {
          type: 'StrategyAccepted',
          data: {
            plan: command.plan,
            ...(command.inline ? { inline: command.inline } : {}),
            ...(command.inputs ? { inputs: command.inputs } : {}),
          },
        },
      ];

    case 'RefuseStrategy':
      if (state.phase !== 'requested') return [];
      return [{ type: 'DeploymentRefused', data: { code: command.code, reason: command.reason } }];

    case 'Advance':
      return advance(state, command.at);

    case 'RecordPhaseEnd': {
      const pending = state.pending;
      if (!pending || pending.childRunId !== command.childRunId || isTerminalRunPhase(state.phase)) return [];
      const { outcome } = command;
      if (outcome.end === 'absent') return state.phase === 'stopping' ? advanceStopped(state, command.at) : [];
      if (outcome.end === 'stopped') {
        // Stopped by the operator (the phase run itself, or this run's stop): the strategy run
        // stops too, with the phase still pending for a resume.
        const stop: RunEvent[] =
          state.phase === 'stopping'
            ? []
            : [
                {
                  type: 'DeploymentStopRequested',
                  data: { reason: 'operator', detail: `phase run ${pending.childRunId} was stopped` },
                },
              ];
        return then(state, stop, (s) => advanceStopped(s, command.at));
      }
      const finished: RunEvent = {
        type: 'StrategyPhaseFinished',
        data: {
          group: pending.action.group,
          phase: pending.action.kind,
          childRunId: pending.childRunId,
          ...phaseResult(pending.action, outcome),
        },
      };
      return then(state, [finished], (s) => advance(s, command.at));
    }

    case 'Stop':
      if (isTerminalRunPhase(state.phase))
        throw new RunError('RUN_ENDED', `run ${state.runId} has already ended (${state.phase})`);
      if (state.phase === 'stopping') return [];
      return then(
        state,
        [
          {
            type: 'DeploymentStopRequested',
            data: {
              reason: 'operator',
              detail: command.detail,
              ...(command.requestedBy ? { requestedBy: command.requestedBy } : {}),
            },
          },
        ],
        // Nothing runs (no phase, or not accepted yet): it ends now. A phase run stops first.
        (s) => (s.pending ? [] : advanceStopped(s, command.at)),
      );

    case 'Resume':
      if (state.phase === 'running') return [];
      if (state.phase !== 'stopped' && state.phase !== 'stopping')
        throw new RunError(
          'RUN_NOT_STOPPED',
          `run ${state.runId} is ${state.phase}; only a stopped run can be resumed`,
        );
      if (!state.groups)
        throw new RunError(
          'RUN_NO_PLAN',
          `run ${state.runId} was stopped before its strategy was accepted: start the deployment again`,
        );
      if (state.phase === 'stopped' && state.stoppedAt) {
        const stoppedAt = [state.stoppedAt, command.phaseStoppedAt ?? state.stoppedAt].sort()[0];
        assertResumeWindowOpen(state.runId, stoppedAt, command.at);
      }
      return then(
        state,
        [
          {
            type: 'DeploymentResumed',
            data: { at: command.at, ...(command.requestedBy ? { requestedBy: command.requestedBy } : {}) },
          },
        ],
        (s) => advance(s, command.at),
      );
  }
}

/** A stopping run with no phase to wait for ends stopped. */
function advanceStopped(state: StrategyRun, at: string): RunEvent[] {
  return [{ type: 'DeploymentStopped', data: { at, failedNodes: failedNodesOf(state) } }];
}

export const strategyRunDecider: Decider<StrategyRun, StrategyRunCommand, RunEvent, undefined> = {
  initialState: initialStrategyRun,
  decide: (state, command) => decideStrategyRun(state, command),
  evolve: (state, event) => evolveStrategyRun(state, event),
  isEnded: (state) => isTerminalRunPhase(state.phase),
};

/** A strategy run folded from its events: the one fold the driver, recovery and queries share. */
export function foldStrategyRun(runId: string, events: readonly RunEvent[]): StrategyRun {
  return foldWith(strategyRunDecider, runId, events, undefined);
}

/** How a phase run ended, from its events; undefined while it runs. */
export function phaseRunOutcome(events: readonly RunEvent[]): PhaseRunOutcome | undefined {
  if (events.length === 0) return { end: 'absent', failedNodes: [] };
  const last = events[events.length - 1];
  if (!isTerminalRunEvent(last.type)) return undefined;
  const failedNodes = [...new Set(events.flatMap((e) => (e.type === 'NodeFailed' ? [e.data.node] : [])))];
  switch (last.type) {
    case 'DeploymentRefused':
      return { end: 'refused', failedNodes, refusalCode: last.data.code, reason: last.data.reason };
    case 'DeploymentSucceeded':
      return { end: 'succeeded', failedNodes };
    case 'DeploymentFailed':
      return { end: 'failed', failedNodes };
    default:
      return { end: 'stopped', failedNodes };
  }
}

/** True for the parent run of a deployment with a strategy (its first event asks for a strategy and it is no phase run). */
export function isStrategyParent(first: RunEvent | undefined): boolean {
  return first?.type === 'DeploymentRequested' && !!first.data.strategy && !first.data.childOf;
}
