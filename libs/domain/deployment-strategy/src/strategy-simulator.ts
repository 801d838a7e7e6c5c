import type { NodeSpec } from '@granule/task-model';
import { planStrategy } from './strategy-plan';
import { applyResult, createGroupMachine, nextAction, type GroupMachineState } from './group-machine';
import type { DeploymentStrategy } from './strategy.types';

/** Which nodes fail in a simulation; every other node acted on succeeds. */
export interface SimulationFailures {
  /** Uids that fail the prepare phase (provisioning graph). */
  failPrepare?: readonly string[];
  /** Uids that fail the deploy phase (default graph). */
  failDeploy?: readonly string[];
}

/**
 * Runs the strategy state machine to the end with made-up node results and returns the final
 * state (see `buildReport`). Uids that are not nodes are never acted on, so they change
 * nothing; callers that take them from a user should check them first.
 */
export function simulateStrategy(
  strategy: DeploymentStrategy,
  nodes: readonly NodeSpec[],
  failures: SimulationFailures = {},
): GroupMachineState {
  const failPrepare = new Set(failures.failPrepare ?? []);
  const failDeploy = new Set(failures.failDeploy ?? []);
  let state = createGroupMachine(planStrategy(strategy, nodes));
  for (let action = nextAction(state); action.kind !== 'done'; action = nextAction(state)) {
    const failing = action.kind === 'prepare' ? failPrepare : failDeploy;
    state = applyResult(state, {
      group: action.group,
      phase: action.kind,
      succeeded: action.nodes.filter((uid) => !failing.has(uid)),
      failed: action.nodes.filter((uid) => failing.has(uid)),
    });
  }
  return state;
}
