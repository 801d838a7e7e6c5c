import type { Decider } from '@granule/core';
import { isTerminalRunPhase } from '@granule/run-events';
import type { RunEvent } from '@granule/run-events';
import { decide } from './decide';
import type { RunCommand } from './decide';
import type { ExecutablePlan } from './executable-plan';
import { evolve, initialRunState } from './run-state';
import type { RunState } from './run-state';

/**
 * The deployment run as a decider. Its context is the run's plan (from the plan store, named by
 * PlanAccepted): `undefined` until the plan is accepted.
 */
export const runDecider: Decider<RunState, RunCommand, RunEvent, ExecutablePlan | undefined> = {
  initialState: initialRunState,
  decide,
  evolve,
  isEnded: (state) => isTerminalRunPhase(state.phase),
};
