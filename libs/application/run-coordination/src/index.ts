export * from './ports';
export { CoordinatorError, RunCoordinator } from './run-coordinator';
export type { CoordinatorOptions } from './run-coordinator';
export { PHASE_GRAPHS, StrategyCoordinator, StrategyRunError } from './strategy-coordinator';
export type { StrategySource } from './strategy-coordinator';
