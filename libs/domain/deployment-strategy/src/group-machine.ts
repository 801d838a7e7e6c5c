/**
 * The group state machine (Airship, seed 004): which group and phase comes next, and how each
 * group is judged by its success criteria. Pure; the strategy-run decider drives it.
 */
import { evaluateCriteria } from './success-criteria';
import { StrategyRunError } from './strategy.errors';
import type { PlannedGroup, StrategyPlan } from './strategy-plan';
import type { GroupFailure, GroupStatus, NodeStatus, StrategyOutcome, StrategyPhase } from './strategy.types';

/** How far a group got: `none` (never started, e.g. failed by a dependency), `prepare`, `deploy`. */
export type GroupStage = 'none' | StrategyPhase;

/** A planned group and where it stands in the run. */
export interface RunGroup extends PlannedGroup {
  status: GroupStatus;
  stage: GroupStage;
  /** Why the group FAILED (criteria of the failing phase, or its failed dependencies). */
  failures: GroupFailure[];
}

/** Work for the driver: run the provisioning (prepare) or default (deploy) graph on `nodes`. */
export interface StrategyAction {
  kind: StrategyPhase;
  group: string;
  /** Never empty: a phase with nothing to do is settled without asking the driver. */
  nodes: string[];
}

/** What {@link nextAction} returns. */
export type NextAction = StrategyAction | { kind: 'done'; outcome: StrategyOutcome };

/** The driver's answer to a {@link StrategyAction}. A node of the action in neither list counts as failed (e.g. timed out). */
export interface PhaseResult {
  group: string;
  phase: StrategyPhase;
  succeeded: string[];
  failed: string[];
}

/** One evaluated phase, in the order they happened (phases with no nodes to act on included). */
export interface StepRecord {
  group: string;
  phase: StrategyPhase;
  /** Nodes acted on (may be empty: they were all handled by earlier groups). */
  nodes: string[];
  succeeded: string[];
  failed: string[];
  /** Criteria not met after this phase; empty when the group passed it. */
  failures: GroupFailure[];
}

/**
 * The group machine's state: where one strategy run's groups stand (the run itself, its phase
 * runs and its lifecycle, is `StrategyRun` in `@granule/strategy-run`). Plain, immutable,
 * JSON-serialisable data. The strategy-run decider (`@granule/strategy-run`) rebuilds it from a run's events by folding
 * {@link applyResult} over the recorded phase results, starting from {@link createGroupMachine}.
 */
export interface GroupMachineState {
  version: 1;
  /** In processing order. */
  groups: RunGroup[];
  /** Every node uid of the deployment, in node-list order. */
  nodeOrder: string[];
  nodes: Record<string, NodeStatus>;
  /** The action the run waits for; null when done. */
  pending: StrategyAction | null;
  /** Set once every eligible group has been processed. */
  outcome: StrategyOutcome | null;
  steps: StepRecord[];
}

/**
 * Starts a run of `plan`: every group NOT_STARTED, every node not_started, then settles what
 * needs no driver (groups whose phases have no node to act on), so {@link nextAction} is ready.
 *
 * Rules (seed 004): groups are processed one at a time in plan order. Prepare acts on the
 * group's nodes that are still not_started; deploy on its nodes that are prepared (so a node
 * that failed prepare is not deployed, and a node already handled by an earlier group is not
 * re-run, though it counts in this group's criteria). Criteria are checked after each phase;
 * failing after prepare skips deploy. A group whose dependency FAILED is FAILED without running.
 */
export function createGroupMachine(plan: StrategyPlan): GroupMachineState {
  const state: GroupMachineState = {
    version: 1,
    groups: plan.groups.map((g) => ({ ...structuredClone(g), status: 'NOT_STARTED', stage: 'none', failures: [] })),
    nodeOrder: [...plan.nodes],
    nodes: Object.fromEntries(plan.nodes.map((uid) => [uid, 'not_started' as NodeStatus])),
    pending: null,
    outcome: null,
    steps: [],
  };
  settle(state);
  return state;
}

/** The action the run waits for, or `done` with the outcome. */
export function nextAction(state: GroupMachineState): NextAction {
  if (state.outcome !== null) return { kind: 'done', outcome: state.outcome };
  if (state.pending !== null) return structuredClone(state.pending);
  const settled = structuredClone(state);
  settle(settled);
  return nextAction(settled);
}

/**
 * Records the result of the pending action and returns the new state (the given one is not
 * changed). Throws {@link StrategyRunError} when the result does not answer the pending action.
 */
export function applyResult(state: GroupMachineState, result: PhaseResult): GroupMachineState {
  const next = structuredClone(state);
  settle(next);
  const pending = next.pending;
  if (pending === null)
    throw new StrategyRunError(
      'STRATEGY_RUN_FINISHED',
      `the run is finished; no ${result.phase} result for group '${result.group}' is expected`,
    );
  if (pending.group !== result.group || pending.kind !== result.phase) {
    throw new StrategyRunError(
      'STRATEGY_UNEXPECTED_RESULT',
      `expected a ${pending.kind} result for group '${pending.group}', got a ${result.phase} result for group '${result.group}'`,
    );
  }
  const acted = new Set(pending.nodes);
  const succeeded = new Set(result.succeeded);
  const failed = new Set(result.failed);
  const foreign = [...new Set([...succeeded, ...failed])].filter((uid) => !acted.has(uid));
  if (foreign.length > 0) {
    throw new StrategyRunError(
      'STRATEGY_UNEXPECTED_RESULT',
      `node(s) ${foreign.join(', ')} were not part of the ${pending.kind} of group '${pending.group}'`,
    );
  }
  const both = [...succeeded].filter((uid) => failed.has(uid));
  if (both.length > 0)
    throw new StrategyRunError(
      'STRATEGY_UNEXPECTED_RESULT',
      `node(s) ${both.join(', ')} reported both succeeded and failed`,
    );

  const group = next.groups.find((g) => g.name === pending.group) as RunGroup;
  next.pending = null;
  finishPhase(
    next,
    group,
    pending.kind,
    pending.nodes,
    pending.nodes.filter((uid) => succeeded.has(uid)),
  );
  settle(next);
  return next;
}

// The functions below mutate a private copy.

function settle(state: GroupMachineState): void {
  while (state.pending === null && state.outcome === null) {
    const group = state.groups.find((g) => g.status === 'NOT_STARTED');
    if (!group) {
      state.outcome = outcomeOf(state);
      return;
    }
    // Plan order is a topological order, so every dependency is already DEPLOYED or FAILED.
    const failedDeps = group.dependsOn.filter((d) => state.groups.find((g) => g.name === d)?.status === 'FAILED');
    if (failedDeps.length > 0) {
      group.status = 'FAILED';
      group.failures = failedDeps.map((d): GroupFailure => ({ criteria: 'depends_on', needed: d, actual: 'FAILED' }));
      continue;
    }
    startPhase(state, group, 'prepare');
  }
}

function startPhase(state: GroupMachineState, group: RunGroup, phase: StrategyPhase): void {
  group.stage = phase;
  const ready: NodeStatus = phase === 'prepare' ? 'not_started' : 'prepared';
  const nodes = group.nodes.filter((uid) => state.nodes[uid] === ready);
  if (nodes.length > 0) state.pending = { kind: phase, group: group.name, nodes };
  else finishPhase(state, group, phase, [], []);
}

function finishPhase(
  state: GroupMachineState,
  group: RunGroup,
  phase: StrategyPhase,
  acted: string[],
  succeeded: string[],
): void {
  const ok = new Set(succeeded);
  const failed = acted.filter((uid) => !ok.has(uid));
  for (const uid of acted) state.nodes[uid] = ok.has(uid) ? (phase === 'prepare' ? 'prepared' : 'deployed') : 'failed';

  const statuses = group.nodes.map((uid) => state.nodes[uid]);
  const successful: NodeStatus[] = phase === 'prepare' ? ['prepared', 'deployed'] : ['deployed'];
  const failures = evaluateCriteria(group.successCriteria, {
    total: statuses.length,
    succeeded: statuses.filter((s) => successful.includes(s)).length,
    failed: statuses.filter((s) => s === 'failed').length,
  });
  state.steps.push({
    group: group.name,
    phase,
    nodes: [...acted],
    succeeded: acted.filter((uid) => ok.has(uid)),
    failed,
    failures,
  });

  if (failures.length > 0) {
    group.status = 'FAILED';
    group.failures = failures;
  } else if (phase === 'prepare') {
    group.status = 'PREPARED';
    startPhase(state, group, 'deploy');
  } else {
    group.status = 'DEPLOYED';
  }
}

function outcomeOf(state: GroupMachineState): StrategyOutcome {
  if (state.groups.some((g) => g.critical && g.status === 'FAILED')) return 'failed';
  if (state.groups.some((g) => g.status === 'FAILED') || Object.values(state.nodes).includes('failed'))
    return 'partial';
  return 'success';
}
