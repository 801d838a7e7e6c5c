import { RUN_EVENT_TYPES, TERMINAL_RUN_EVENTS } from './run-events';
import type { RunEventType, TerminalRunEventType } from './run-events';

/** Where a run stands, as every reader names it (runs list, metrics, the recap, the deciders). */
export const RUN_PHASES = [
  'requested',
  'queued',
  'running',
  'stopping',
  'succeeded',
  'failed',
  'stopped',
  'refused',
  'expired',
] as const;
export type RunPhaseName = (typeof RUN_PHASES)[number];

/** The phase each event puts a run in (any event not named here: running). */
const PHASE_AFTER = {
  DeploymentRequested: 'requested',
  DeploymentQueued: 'queued',
  DeploymentRefused: 'refused',
  DeploymentStopRequested: 'stopping',
  DeploymentSucceeded: 'succeeded',
  DeploymentFailed: 'failed',
  DeploymentStopped: 'stopped',
  DeploymentExpired: 'expired',
} as const satisfies Partial<Record<RunEventType, RunPhaseName>>;

/** A phase a run ends in: the phase of a terminal event (a terminal event without one does not compile). */
export type TerminalRunPhase = (typeof PHASE_AFTER)[TerminalRunEventType];

/**
 * The phases a run ends in, derived from `TERMINAL_RUN_EVENTS` so the two lists cannot disagree
 * (they did: an expired run was ended by its events and open by its phase).
 */
export const TERMINAL_RUN_PHASES: readonly TerminalRunPhase[] = TERMINAL_RUN_EVENTS.map((t) => PHASE_AFTER[t]);
const TERMINAL_PHASE_SET: ReadonlySet<string> = new Set(TERMINAL_RUN_PHASES);

export function isTerminalRunPhase(phase: string): boolean {
  return TERMINAL_PHASE_SET.has(phase);
}

/** The phase a run is in when `type` is its last event (any other event: running). */
export function phaseAfterEvent(type: string): RunPhaseName {
  return (PHASE_AFTER as Partial<Record<string, RunPhaseName>>)[type] ?? 'running';
}

/** The event types after which a run is in one of `phases` (what `runs list --status` asks the log for). */
export function lastEventTypesOf(phases: readonly RunPhaseName[]): RunEventType[] {
  const wanted = new Set<string>(phases);
  return RUN_EVENT_TYPES.filter((t) => wanted.has(phaseAfterEvent(t)));
}
