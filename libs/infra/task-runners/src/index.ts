/**
 * Task runners of the node-agent: execute one deployment task on this host (shell, puppet,
 * sync, upload_file, copy_files, reboot; stage/group/skipped are no-ops), stream its output,
 * remember finished tasks in a local journal, and stop what a task left running when the agent
 * process running it died.
 */
export * from './task-runner.types';
export * from './task-runner.errors';
export { runTask, TaskRunner, isRebootPending, resolveRootDir } from './task-runner';
export { TaskJournal, TASK_JOURNAL_FILE, journalKey } from './task-journal';
export type { TaskJournalEntry } from './task-journal';
export { systemClock, sleep } from './clock';
export type { Clock } from './clock';
export { nodeProcessSpawner, processStartTime, currentBootId } from './process-spawner';
export {
  OUTPUT_DRAIN_MS,
  ProcessStartError,
  TASK_IDENTITY_ENV,
  planLaunch,
  stopPlan,
  taskEnvironment,
  type LaunchLimits,
  type LaunchPlan,
  type ProcessSpec,
  type StopPlan,
  type TaskIdentity,
} from './launch-plan';
export {
  AgentProcessSpawner,
  NATIVE_SPAWN_HELPER,
  SPAWN_HELPER_CHOICES,
  type AgentProcessSpawnerOptions,
  type SpawnHelperChoice,
} from './agent-process-spawner';
export { stopLeftoverGroup } from './leftover-group';
export type { LeftoverGroupState, LeftoverGroupStop, StopLeftoverOptions } from './leftover-group';
export type { ProcessExit, ProcessSpawner, SpawnedProcess } from './process-spawner';
export { OutputCollector } from './output-collector';
export { OUTPUT_MASK, SecretMasker } from './secret-masker';
export { resolveUnderRoots, realLocation } from './path-guard';
export { writeAllSync, writeFileAtomic, writeFileAtomicSync, copyFileAtomic } from './atomic-file';
export { puppetApplyArgs, puppetStateDir } from './puppet.runner';
export { isRemoteRsyncPath } from './sync.runner';
