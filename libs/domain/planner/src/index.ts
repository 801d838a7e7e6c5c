export * from './plan-types';
export * from './planner-errors';
export * from './task-layers';
export { STANDARD_STAGE_IDS, STAGE_BOUNDS } from './standard-stages';
export { buildPlan } from './build-plan';
export {
  instanceAt,
  instanceName,
  instancesDotWriter,
  instancesMermaidWriter,
  planInstances,
  renderInstancesDot,
  renderInstancesMermaid,
  renderPlanDot,
  renderPlanMermaid,
  renderPlanText,
  taskName,
  writePlanJson,
} from './plan-output';
export type { InstancesGraphWriter } from './plan-output';
export { instanceDurations, simulatePlan } from './simulate-plan';
export { READY_ORDER_RULES, readyTaskComparator, readyTaskRank } from './ready-order';
export type { ReadyOrderRule, ReadyRankInput } from './ready-order';
export type { SimulationEntry, SimulationOptions, SimulationResult } from './simulate-plan';
