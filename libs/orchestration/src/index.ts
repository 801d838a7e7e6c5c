export * from './ports';
export { CoordinatorError, RunCoordinator } from './run-coordinator';
export type { CoordinatorOptions } from './run-coordinator';
