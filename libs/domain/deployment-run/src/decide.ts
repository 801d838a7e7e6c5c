import { checkReportOf } from '@granule/run-events';
import type { CommandExpiry, DeploymentRequested, RunEvent, TaskProgressMessage } from '@granule/run-events';
import { lockConflicts, nodesLockedReason, nodesToLock, sameHolders } from './node-locks';
import type { NodeHolders } from './node-locks';
import { dispatchIdOf, isTerminalRunPhase, assertResumeWindowOpen, RunError } from '@granule/run-events';
import { readyTaskComparator } from '@granule/planner';
import type { ExecutablePlan } from './executable-plan';
import { S } from './run-state';
import type { RunState } from './run-state';
import { taskBudgetSeconds } from './task-budget';

export interface ExecutionLimits {
  /** Cluster-wide limit on nodes running a task at once. */
  maxBusyNodes: number;
}

/** Everything the orchestrator asks of a run. Each answer is a list of events (maybe empty). */
export type RunCommand =
  | { type: 'RequestDeployment'; request: DeploymentRequested['data'] }
  /** Records a request whose command expired before an orchestrator took it: the run ends at once, nothing runs. */
  | { type: 'ExpireRequest'; request: DeploymentRequested['data']; expiry: CommandExpiry }
  /** `holders`: who holds the plan's nodes now (ADR 0024; absent: nobody). */
  | {
      type: 'AcceptPlan';
      planId: string;
      planHash: string;
      offlineNodes: string[];
      only?: string[];
      at: string;
      holders?: NodeHolders;
    }
  | { type: 'RefusePlan'; code: string; reason: string }
  | { type: 'DispatchReady'; at: string; limits: ExecutionLimits }
  | { type: 'RecordProgress'; message: TaskProgressMessage }
  | {
      type: 'CheckHealth';
      at: string;
      offlineNodes: string[];
      /**
       * What the driver knows of dispatches not started yet: when the message stream accepted
       * each (epoch ms, by task key), and which it has not accepted yet. A task's budget runs from
       * the later of its TaskDispatched and that acceptance, and not at all while the dispatch is
       * still unsent: a dispatch waiting its turn to leave (10,000 at once) or NATS being away is
       * not the agent's delay (ADR 0034). Without them (another process, after a restart) the
       * budget runs from TaskDispatched.
       */
      dispatchSentAt?: ReadonlyMap<string, number>;
      dispatchUnsent?: ReadonlySet<string>;
    }
  /** `requestedBy`: the authenticated operator who asked (recorded in the event). */
  | { type: 'Stop'; at: string; requestedBy?: string }
  /** `holders` as for AcceptPlan; `wait`: queue when a node is held instead of refusing. */
  | { type: 'Resume'; at: string; holders?: NodeHolders; wait?: boolean; requestedBy?: string }
  | { type: 'Finish'; at: string };

/** The stop an operator asked for, naming them when known. */
function operatorStop(requestedBy: string | undefined): {
  reason: 'operator';
  detail: string;
  requestedBy?: string;
} {
  return { reason: 'operator', detail: 'stopped by the operator', ...(requestedBy ? { requestedBy } : {}) };
}

/** The events a failed node causes: NodeFailed, exceeded groups, and a stop when the run can no longer succeed. */
function nodeFailure(
  state: RunState,
  plan: ExecutablePlan,
  n: number,
  reason: 'offline' | 'task_failed' | 'task_timed_out',
  task?: string,
): RunEvent[] {
  if (state.failedNodes.has(n)) return [];
  const events: RunEvent[] = [
    { type: 'NodeFailed', data: { node: plan.nodeNames[n], reason, ...(task ? { task } : {}) } },
  ];
  const exceeded: string[] = [];
  for (const gi of plan.groupsOfNode[n]) {
    if (state.exceededGroups.has(gi)) continue;
    const group = plan.groups[gi];
    const failed = group.nodes.filter((m) => m === n || state.failedNodes.has(m));
    if (failed.length > group.tolerance) {
      exceeded.push(group.id);
      events.push({
        type: 'GroupToleranceExceeded',
        data: { group: group.id, failed: failed.map((m) => plan.nodeNames[m]), tolerance: group.tolerance },
      });
    }
  }
  const critical = plan.groupsOfNode[n].length === 0;
  if (state.request?.tolerateNodeFailures) return events.filter((e) => e.type === 'NodeFailed');
  if ((critical || exceeded.length > 0) && state.phase === 'running') {
    events.push({
      type: 'DeploymentStopRequested',
      data: critical
        ? {
            reason: 'critical_node',
            detail: `node ${plan.nodeNames[n]} failed and belongs to no fault-tolerance group`,
          }
        : { reason: 'fault_tolerance', detail: `too many failed nodes in group ${exceeded.join(', ')}` },
    });
  }
  return events;
}

function offlineAtStart(plan: ExecutablePlan, offline: string[]): { critical: string[]; failed: number[] } {
  const down = offline.map((uid) => plan.nodeIndex.get(uid)).filter((n): n is number => n !== undefined);
  const downSet = new Set(down);
  const critical = new Set<number>();
  for (const n of down) {
    if (plan.groupsOfNode[n].length === 0) critical.add(n);
    for (const gi of plan.groupsOfNode[n]) {
      const g = plan.groups[gi];
      if (g.nodes.filter((m) => downSet.has(m)).length > g.tolerance) critical.add(n);
    }
  }
  return { critical: [...critical].map((n) => plan.nodeNames[n]).sort(), failed: down };
}

/**
 * Decides what happens next in a run: a pure function of the state, the command and the
 * plan. The orchestrator appends the events, applies them with `evolve`, and only then acts
 * on them (publishes dispatches).
 */
export function decide(state: RunState, command: RunCommand, plan?: ExecutablePlan): RunEvent[] {
  switch (command.type) {
    case 'RequestDeployment':
      if (state.phase !== 'new') throw new RunError('RUN_EXISTS', `run ${state.runId} already exists`);
      return [{ type: 'DeploymentRequested', data: command.request }];

    case 'ExpireRequest':
      if (state.phase !== 'new') throw new RunError('RUN_EXISTS', `run ${state.runId} already exists`);
      return [
        { type: 'DeploymentRequested', data: command.request },
        { type: 'DeploymentExpired', data: command.expiry },
      ];

    case 'AcceptPlan': {
      const waiting = state.phase === 'queued' && !state.queued?.resume;
      if (state.phase !== 'requested' && !waiting) return [];
      if (!plan) throw new RunError('RUN_NO_PLAN', `AcceptPlan for run ${state.runId} needs the plan`);
      const conflicts = state.request?.dryRun
        ? []
        : lockConflicts(state.runId, nodesToLock(plan, command.only), command.holders ?? new Map());
      if (conflicts.length > 0) {
        if (state.request?.waitForLocks) {
          if (sameHolders(state.queued?.heldBy, conflicts)) return [];
          const planned = { planId: command.planId, planHash: command.planHash };
          return [
            {
              type: 'DeploymentQueued',
              data: {
                heldBy: conflicts,
                plan: { ...planned, ...(command.only ? { only: command.only } : {}) },
                at: command.at,
              },
            },
          ];
        }
        return [
          {
            type: 'DeploymentRefused',
            data: {
              code: 'NODES_LOCKED',
              reason: nodesLockedReason(conflicts, state.request?.retryOf ? 'retry' : 'deploy'),
            },
          },
        ];
      }
      const { critical, failed } = offlineAtStart(plan, command.offlineNodes);
      if (critical.length > 0 && !state.request?.tolerateNodeFailures) {
        return [
          {
            type: 'DeploymentRefused',
            data: {
              code: 'OFFLINE_CRITICAL_NODES',
              // Named up to ten: at 10,000 nodes the whole list is a page of names, not a reason.
              reason: `critical nodes are offline: ${critical.slice(0, 10).join(', ')}${critical.length > 10 ? ` and ${critical.length - 10} more` : ''}`,
              offlineCriticalNodes: critical,
            },
          },
        ];
      }
      const tasks = plan.noWork.reduce((sum, v) => sum + (v ? 0 : 1), 0);
      const events: RunEvent[] = [
        {
          type: 'PlanAccepted',
          data: {
            planId: command.planId,
            planHash: command.planHash,
            instances: plan.size,
            tasks,
            nodes: plan.nodeNames,
            ...(command.only ? { only: command.only } : {}),
          },
        },
        ...failed.map((n): RunEvent => ({ type: 'NodeFailed', data: { node: plan.nodeNames[n], reason: 'offline' } })),
      ];
      if (state.request?.dryRun)
        events.push({ type: 'DeploymentSucceeded', data: { at: command.at, failedNodes: [] } });
      return events;
    }

    case 'RefusePlan':
      if (state.phase !== 'requested') return [];
      return [{ type: 'DeploymentRefused', data: { code: command.code, reason: command.reason } }];

    case 'DispatchReady': {
      const p = state.plan;
      if (state.phase !== 'running' || !p || state.ready.size === 0) return [];
      const candidates = [...state.ready].sort(readyTaskComparator(p.work));
      const events: RunEvent[] = [];
      const taken = new Set<number>();
      const running = new Map<string, number>();
      let busy = state.busyNodes;
      for (const i of candidates) {
        if (busy >= command.limits.maxBusyNodes) break;
        const n = p.node[i];
        if (n >= 0 && (state.busy[n] >= 0 || taken.has(n) || state.failedNodes.has(n))) continue;
        const task = p.task[i];
        const limit = p.concurrency.get(task);
        const now = running.get(task) ?? state.runningOfTask.get(task) ?? 0;
        if (limit !== undefined && now >= limit) continue;
        running.set(task, now + 1);
        if (n >= 0) taken.add(n);
        busy++;
        const attempt = state.attempt[i] + 1;
        events.push({
          type: 'TaskDispatched',
          data: { key: p.keys[i], attempt, dispatchId: dispatchIdOf(state.runId, p.keys[i], attempt), at: command.at },
        });
      }
      return events;
    }

    case 'RecordProgress': {
      const p = state.plan;
      const m = command.message;
      const i = p?.index.get(m.key);
      if (!p || i === undefined || m.attempt !== state.attempt[i]) return [];
      // Only the node the instance was dispatched to, answering the dispatch it was sent (its
      // run, key and attempt), moves it on: a report naming another node or dispatch changes nothing.
      if (m.node !== p.nodeNames[p.node[i]] || m.dispatchId !== dispatchIdOf(state.runId, m.key, m.attempt)) return [];
      const status = state.status[i];
      const inFlight = status === S.Dispatched || status === S.Running;
      const at = m.at;
      if (m.status === 'started')
        return status === S.Dispatched ? [{ type: 'TaskStarted', data: { key: m.key, attempt: m.attempt, at } }] : [];
      if (!inFlight) return [];
      if (m.status === 'attempt_failed') {
        // A try failed and the agent runs it again: the task is running (its start recorded now
        // when no `started` came before), and the try is a fact of its own.
        const start: RunEvent[] =
          status === S.Dispatched
            ? [{ type: 'TaskStarted', data: { key: m.key, attempt: m.attempt, at: m.startedAt ?? at } }]
            : [];
        return [
          ...start,
          {
            type: 'TaskAttemptFailed',
            data: {
              key: m.key,
              attempt: m.attempt,
              try: m.try ?? 1,
              of: m.tries ?? 1,
              exitCode: m.exitCode ?? null,
              reason:
                m.error ?? (m.exitCode === undefined || m.exitCode === null ? 'failed' : `exit code ${m.exitCode}`),
              ...(m.timedOut ? { timedOut: true } : {}),
              ...(m.durationMs !== undefined ? { durationMs: m.durationMs } : {}),
              at,
            },
          },
        ];
      }
      // An outcome with no `started` before it (a short task, see TaskProgressMessage.startedAt):
      // the start is recorded with it, so the log has every transition.
      const started: RunEvent[] =
        status === S.Dispatched && m.startedAt
          ? [{ type: 'TaskStarted', data: { key: m.key, attempt: m.attempt, at: m.startedAt } }]
          : [];
      const result = {
        key: m.key,
        attempt: m.attempt,
        exitCode: m.exitCode ?? null,
        durationMs: m.durationMs ?? 0,
        outputTail: m.outputTail ?? '',
        at,
        ...(m.try !== undefined ? { tries: m.try } : {}),
      };
      if (m.status === 'succeeded') {
        // A check run (ADR 0031): a task the agent did not run is skipped; one that ran says
        // whether it would change something. Reports of other runs carry no check.
        const check = state.request?.check ? checkReportOf(m.check) : undefined;
        if (check?.verdict === 'skipped')
          return [
            ...started,
            {
              type: 'TaskSkipped',
              data: { key: m.key, reason: 'check', at, ...(check.reason ? { detail: check.reason } : {}) },
            },
          ];
        return [
          ...started,
          {
            type: 'TaskSucceeded',
            data: { ...result, ...(check ? { check } : {}) },
          },
        ];
      }
      if (!p.failOnError[i])
        return [...started, { type: 'TaskSkipped', data: { key: m.key, reason: 'fail_on_error', at } }];
      const failure: RunEvent =
        m.status === 'timed_out'
          ? {
              type: 'TaskTimedOut',
              data: {
                key: m.key,
                attempt: m.attempt,
                at,
                durationMs: result.durationMs,
                outputTail: result.outputTail,
                ...(m.try !== undefined ? { tries: m.try } : {}),
              },
            }
          : { type: 'TaskFailed', data: { ...result, ...(m.error ? { error: m.error } : {}) } };
      return [
        ...started,
        failure,
        ...nodeFailure(state, p, p.node[i], m.status === 'timed_out' ? 'task_timed_out' : 'task_failed', p.task[i]),
      ];
    }

    case 'CheckHealth': {
      const p = state.plan;
      if (!p || (state.phase !== 'running' && state.phase !== 'stopping')) return [];
      const now = Date.parse(command.at);
      const events: RunEvent[] = [];
      const failing = new Set<number>();
      // Work on a scratch view so two failures in one check see each other.
      const view: RunState = {
        ...state,
        failedNodes: new Set(state.failedNodes),
        exceededGroups: new Set(state.exceededGroups),
      };
      const fail = (n: number, reason: 'offline' | 'task_timed_out', task?: string): void => {
        const more = nodeFailure(view, p, n, reason, task);
        for (const e of more) {
          events.push(e);
          if (e.type === 'NodeFailed') view.failedNodes.add(n);
          if (e.type === 'GroupToleranceExceeded')
            view.exceededGroups.add(p.groups.findIndex((g) => g.id === e.data.group));
          if (e.type === 'DeploymentStopRequested') view.phase = 'stopping';
        }
      };
      for (let n = 0; n < p.nodeNames.length; n++) {
        const i = state.busy[n];
        if (i < 0) continue;
        let since = state.startedAt[i];
        if (!since) {
          if (command.dispatchUnsent?.has(p.keys[i])) continue;
          since = Math.max(state.dispatchedAt[i], command.dispatchSentAt?.get(p.keys[i]) ?? 0);
        }
        if (now - since > taskBudgetSeconds(p.type[i], p.parameters[i]) * 1000) {
          events.push({ type: 'TaskTimedOut', data: { key: p.keys[i], attempt: state.attempt[i], at: command.at } });
          failing.add(n);
          fail(n, 'task_timed_out', p.task[i]);
        }
      }
      for (const uid of command.offlineNodes) {
        const n = p.nodeIndex.get(uid);
        if (n === undefined || failing.has(n) || view.failedNodes.has(n)) continue;
        const hasWork = p.instancesOfNode[n].some(
          (i) => state.status[i] === S.Pending || state.status[i] === S.Dispatched || state.status[i] === S.Running,
        );
        if (!hasWork) continue;
        const i = state.busy[n];
        if (i >= 0) {
          events.push({
            type: 'TaskFailed',
            data: {
              key: p.keys[i],
              attempt: state.attempt[i],
              exitCode: null,
              durationMs: 0,
              outputTail: '',
              error: `node ${uid} went offline`,
              at: command.at,
            },
          });
        }
        fail(n, 'offline');
      }
      return events;
    }

    case 'Stop':
      if (isTerminalRunPhase(state.phase))
        throw new RunError('RUN_ENDED', `run ${state.runId} has already ended (${state.phase})`);
      if (state.phase === 'stopping') return [];
      // Not planned yet (its planning failed and waits for another try), or queued behind another
      // run's nodes: nothing runs, it ends now.
      if (state.phase === 'requested' || state.phase === 'queued')
        return [
          { type: 'DeploymentStopRequested', data: operatorStop(command.requestedBy) },
          {
            type: 'DeploymentStopped',
            data: { at: command.at, failedNodes: [], ...(state.plan ? {} : { beforeStart: true }) },
          },
        ];
      return [{ type: 'DeploymentStopRequested', data: operatorStop(command.requestedBy) }];

    case 'Resume': {
      if (state.phase === 'running') return [];
      if (!state.plan)
        throw new RunError(
          'RUN_NO_PLAN',
          `run ${state.runId} was stopped before it was planned: start the deployment again`,
        );
      const queuedResume = state.phase === 'queued' && state.queued?.resume;
      if (state.phase !== 'stopped' && state.phase !== 'stopping' && !queuedResume) {
        throw new RunError(
          'RUN_NOT_STOPPED',
          `run ${state.runId} is ${state.phase}; only a stopped run can be resumed (use retry for a failed one)`,
        );
      }
      if (state.phase === 'stopped' && state.stoppedAt)
        assertResumeWindowOpen(state.runId, state.stoppedAt, command.at);
      // A stopping run still holds its nodes; a stopped one gave them up and takes them again.
      const conflicts =
        state.phase === 'stopping'
          ? []
          : lockConflicts(state.runId, state.lockedNodes ?? [], command.holders ?? new Map());
      if (conflicts.length > 0) {
        if (!command.wait && !queuedResume)
          throw new RunError(
            'NODES_LOCKED',
            `run ${state.runId} cannot resume: ${nodesLockedReason(conflicts, 'resume')}`,
          );
        if (sameHolders(state.queued?.heldBy, conflicts)) return [];
        return [
          {
            type: 'DeploymentQueued',
            data: {
              heldBy: conflicts,
              resume: true,
              ...(command.requestedBy ? { requestedBy: command.requestedBy } : {}),
              at: command.at,
            },
          },
        ];
      }
      return [
        {
          type: 'DeploymentResumed',
          data: { at: command.at, ...(command.requestedBy ? { requestedBy: command.requestedBy } : {}) },
        },
      ];
    }

    case 'Finish': {
      const p = state.plan;
      if (!p || (state.phase !== 'running' && state.phase !== 'stopping') || state.busyNodes > 0) return [];
      const failedNodes = [...state.failedNodes].map((n) => p.nodeNames[n]).sort();
      if (state.phase === 'stopping') {
        if (state.stopReason?.reason === 'operator')
          return [{ type: 'DeploymentStopped', data: { at: command.at, failedNodes } }];
        return [
          {
            type: 'DeploymentFailed',
            data: { at: command.at, reason: state.stopReason?.detail ?? 'stopped', failedNodes },
          },
        ];
      }
      if (state.unfinished > 0) {
        if (state.ready.size > 0) return [];
        return [
          {
            type: 'DeploymentFailed',
            data: { at: command.at, reason: `${state.unfinished} task(s) can never run`, failedNodes },
          },
        ];
      }
      return [{ type: 'DeploymentSucceeded', data: { at: command.at, failedNodes } }];
    }
  }
}
