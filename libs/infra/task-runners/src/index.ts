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
export { nodeProcessSpawner, OUTPUT_DRAIN_MS, processStartTime, currentBootId } from './process-spawner';
export {
  HelperProcessSpawner,
  NATIVE_SPAWN_HELPER,
  SPAWN_HELPER_CHOICES,
  SPAWN_HELPER_SCRIPT,
  type HelperProcessSpawnerOptions,
  type SpawnHelperChoice,
} from './helper-process-spawner';
export { stopLeftoverGroup } from './leftover-group';
export type { LeftoverGroupState, LeftoverGroupStop, StopLeftoverOptions } from './leftover-group';
export type { ProcessExit, ProcessSpawner, ProcessSpec, SpawnedProcess } from './process-spawner';
export { OutputCollector } from './output-collector';
export { OUTPUT_MASK, SecretMasker } from './secret-masker';
export { resolveUnderRoots, realLocation } from './path-guard';
export { writeAllSync, writeFileAtomic, writeFileAtomicSync, copyFileAtomic } from './atomic-file';
export { puppetApplyArgs, puppetStateDir } from './puppet.runner';
export { isRemoteRsyncPath } from './sync.runner';
