export * from './executable-plan';
export {
  S as InstanceStatus,
  STATUS_NAMES,
  evolve,
  foldRun,
  initialRunState,
  instanceStatuses,
  isFinished,
} from './run-state';
export type { InstanceStatusName, RunPhase, RunState } from './run-state';
export { decide } from './decide';
export { runDecider } from './run.decider';
export type { ExecutionLimits, RunCommand } from './decide';
export { BUDGET_GRACE_SECONDS, TASK_DEFAULTS, taskBudgetSeconds } from './task-budget';
export { summarizeRun, taskInstances } from './run-summary';
export { RUN_NODE_STATUSES, knownNodeStatuses, nodeStatusChanges, runNodeStatus } from './node-status';
export type { RunNodeStatus } from './node-status';
export { nodeStatusUpdates, statusAfterOnline } from './node-status-projection';
export { environmentStatusAfter, runSpeaksForEnvironment } from './environment-status-projection';
export type { ProjectedEnvironmentStatus } from './environment-status-projection';
export type { LoggedEvent, NodeStatusUpdate, ProjectedNodeStatus } from './node-status-projection';
export {
  describeHolders,
  holdsNodeLocks,
  lockConflicts,
  nodeLockChanges,
  nodesLockedReason,
  nodesToLock,
  sameHolders,
} from './node-locks';
export type { NodeHolders } from './node-locks';
