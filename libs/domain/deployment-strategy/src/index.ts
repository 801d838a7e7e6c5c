/**
 * Deployment strategies (Airship DeploymentStrategy, seed 004): parse and validate the
 * document, resolve groups against nodes, and drive a run as a pure state machine.
 */
export * from './strategy.types';
export * from './strategy.errors';
export { parseStrategyDocument, type ParsedStrategy } from './strategy-document';
export { validateStrategy } from './strategy-validation';
export { findCycles } from './strategy-checks';
export { isEmptySelector, selectNodes, selectorMatches } from './node-selector';
export { evaluateCriteria, type NodeTally } from './success-criteria';
export {
  DEFAULT_GROUP_NAME,
  defaultStrategy,
  orderGroups,
  planStrategy,
  type PlannedGroup,
  type StrategyPlan,
} from './strategy-plan';
export {
  applyResult,
  createGroupMachine,
  nextAction,
  type GroupStage,
  type NextAction,
  type PhaseResult,
  type RunGroup,
  type StepRecord,
  type StrategyAction,
  type GroupMachineState,
} from './group-machine';
export { simulateStrategy, type SimulationFailures } from './strategy-simulator';
export {
  buildReport,
  formatProcessingLog,
  type GroupReportRow,
  type StepReportLine,
  type StrategyReport,
} from './strategy-report';
