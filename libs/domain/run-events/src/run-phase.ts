import { RUN_EVENT_TYPES, type RunEventType } from './run-events';

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

/** The phases a run ends in; their events are `TERMINAL_RUN_EVENTS`. */
export const TERMINAL_RUN_PHASES = [
  'succeeded',
  'failed',
  'stopped',
  'refused',
] as const satisfies readonly RunPhaseName[];
const TERMINAL_PHASE_SET: ReadonlySet<string> = new Set(TERMINAL_RUN_PHASES);

export function isTerminalRunPhase(phase: string): boolean {
  return TERMINAL_PHASE_SET.has(phase);
}

const PHASE_AFTER: Partial<Record<RunEventType, RunPhaseName>> = {
  DeploymentRequested: 'requested',
  DeploymentQueued: 'queued',
  DeploymentRefused: 'refused',
  DeploymentStopRequested: 'stopping',
  DeploymentSucceeded: 'succeeded',
  DeploymentFailed: 'failed',
  DeploymentStopped: 'stopped',
  DeploymentExpired: 'expired',
};

/** The phase a run is in when `type` is its last event (any other event: running). */
export function phaseAfterEvent(type: string): RunPhaseName {
  return PHASE_AFTER[type as RunEventType] ?? 'running';
}

/** The event types after which a run is in one of `phases` (what `runs list --status` asks the log for). */
export function lastEventTypesOf(phases: readonly RunPhaseName[]): RunEventType[] {
  const wanted = new Set<string>(phases);
  return RUN_EVENT_TYPES.filter((t) => wanted.has(phaseAfterEvent(t)));
}
