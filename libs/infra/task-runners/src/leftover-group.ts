import { systemClock, type Clock } from './clock';
import { stopPlan, TASK_IDENTITY_ENV } from './launch-plan';
import {
  currentBootId,
  processEnvironment,
  processGroupAlive,
  processGroupMembers,
  signalProcessGroup,
  type ProcStat,
} from './process-spawner';
import { waitForGroupGone } from './run-process';
import { DEFAULT_KILL_GRACE_MS, type TaskProcessGroup } from './task-runner.types';

/**
 * What became of a recorded process group:
 * - `gone`: nothing of it runs (or the host rebooted since), nothing was signalled;
 * - `unconfirmed`: a group with that id runs but is not proven to be the task's (the id was
 *   reused, or there is no /proc to check); it was left alone;
 * - `stopped`: it was the task's and it is gone after SIGTERM (and SIGKILL after the grace);
 * - `survived`: it was the task's and something of it still ran after SIGKILL.
 */
export type LeftoverGroupState = 'gone' | 'unconfirmed' | 'stopped' | 'survived';

export interface LeftoverGroupStop {
  state: LeftoverGroupState;
  /** Pids of the group found running before anything was signalled (empty for `gone`). */
  pids: number[];
}

export interface StopLeftoverOptions {
  /** Time between SIGTERM and SIGKILL. Default `DEFAULT_KILL_GRACE_MS`. */
  killGraceMs?: number;
  clock?: Clock;
}

/**
 * Stops what a task started by an earlier agent process left running, as `stopPlan` says: the
 * whole process group `group.pgid` gets SIGTERM, then SIGKILL after the grace, and the call
 * returns once it is gone (or 2 s after SIGKILL). A group is only signalled when it is proven to be the task's, so a
 * reused id never hits an unrelated group: its leader's start time equals `group.startTime`, or
 * (the leader is gone or its start time unknown) a member's environment has the task's
 * `GRANULE_RUN_ID` and `GRANULE_TASK_ID`. A different boot id means the group is `gone`.
 * Linux only (/proc); elsewhere a running group is `unconfirmed`. Never throws.
 */
export async function stopLeftoverGroup(
  group: TaskProcessGroup,
  options: StopLeftoverOptions = {},
): Promise<LeftoverGroupStop> {
  const bootId = currentBootId();
  if (group.bootId !== undefined && bootId !== undefined && group.bootId !== bootId) return { state: 'gone', pids: [] };
  const members = processGroupMembers(group.pgid);
  if (members === undefined) return { state: processGroupAlive(group.pgid) ? 'unconfirmed' : 'gone', pids: [] };
  if (members.length === 0) return { state: 'gone', pids: [] };
  const pids = members.map((m) => m.pid).sort((a, b) => a - b);
  if (!isTheTasksGroup(group, members)) return { state: 'unconfirmed', pids };

  const clock = options.clock ?? systemClock;
  const target = {
    signalGroup: (signal: NodeJS.Signals | 0) => signalProcessGroup(group.pgid, signal),
    groupAlive: () => processGroupAlive(group.pgid),
  };
  const stop = stopPlan(options.killGraceMs ?? DEFAULT_KILL_GRACE_MS);
  const since = clock.now();
  target.signalGroup(stop.termSignal);
  await waitForGroupGone(target, since, stop, clock);
  return { state: target.groupAlive() ? 'survived' : 'stopped', pids };
}

function isTheTasksGroup(group: TaskProcessGroup, members: readonly ProcStat[]): boolean {
  const leader = members.find((m) => m.pid === group.pgid);
  // A live leader with another start time is a later process that got the id: not the task's.
  if (leader && group.startTime !== undefined) return leader.startTime === group.startTime;
  const candidates = leader ? [leader] : members;
  return candidates.some((m) => {
    const env = processEnvironment(m.pid, [TASK_IDENTITY_ENV.runId, TASK_IDENTITY_ENV.taskId]);
    return env[TASK_IDENTITY_ENV.runId] === group.runId && env[TASK_IDENTITY_ENV.taskId] === group.taskId;
  });
}
