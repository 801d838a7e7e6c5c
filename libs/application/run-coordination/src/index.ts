export * from './ports';
export { DeciderDriver } from './decider-driver';
export type { Alongside, DrivenStream, DriverEventLog, DriverPorts, StreamProcess } from './decider-driver';
export { outcomeOfRun, RunCoordinator } from './run-coordinator';
export type { CoordinatorOptions, RunStartExtra } from './run-coordinator';
export { StrategyCoordinator } from './strategy-coordinator';
export type { StrategySource, StrategyStart } from './strategy-coordinator';
