import { GranuleError } from '@granule/core';
import type {
  DeploymentRequested,
  PlanReplyMessage,
  RetryFailed,
  RunEvent,
  StartDeployment,
  TaskDispatchMessage,
  TaskProgressMessage,
} from '@granule/contracts';
import { TERMINAL_RUN_EVENTS } from '@granule/contracts';
import {
  InstanceStatus,
  decide,
  evolve,
  foldRun,
  initialRunState,
  knownNodeStatuses,
  nodeStatusChanges,
} from '@granule/deployment-run';
import type { ExecutablePlan, ExecutionLimits, RunCommand, RunNodeStatus, RunState } from '@granule/deployment-run';
import type { CoordinatorPorts, OpenRun } from './ports';
import { requestData } from './request-data';
import { isStrategyParent, leaseAndRead, notDrivenReason } from './run-recovery';

export class CoordinatorError extends GranuleError<
  'RUN_EXISTS' | 'RUN_UNKNOWN' | 'RUN_ENDED' | 'RUN_NOT_OWNED' | 'RUN_NOT_RETRYABLE' | 'PLAN_MISSING'
> {}

interface ActiveRun {
  state: RunState;
  plan?: ExecutablePlan;
  /** What this run has said of each node (NodeStatusChanged), by node index. */
  nodeStatus: Map<number, RunNodeStatus>;
  /** Serialises everything that touches this run. */
  queue: Promise<unknown>;
  /**
   * Dispatches recorded in the log that the message stream has not accepted yet (NATS was
   * unreachable), by dispatch id: sent again on every tick until they get through.
   */
  unsent: Map<string, TaskDispatchMessage>;
  /** Set when an append failed and the state could not be folded again from the log yet. */
  stale?: boolean;
  /** The request to plan, kept until a plan is accepted or refused (a failed try is made again on a tick). */
  planRequest?: StartDeployment;
  /** A plan is being asked for (it may take a while: a big plan, a planner that is away). */
  planning?: boolean;
}

export interface CoordinatorOptions {
  limits: ExecutionLimits;
}

const TERMINAL = new Set<string>(TERMINAL_RUN_EVENTS);

/**
 * Drives runs: the only writer of run streams. Every step is decide → append → evolve → act,
 * so what happened is in the event log before any dispatch leaves, and a restarted
 * orchestrator rebuilds each open run by folding its events (`recover`).
 */
export class RunCoordinator {
  private readonly runs = new Map<string, ActiveRun>();

  constructor(
    private readonly ports: CoordinatorPorts,
    private readonly options: CoordinatorOptions,
  ) {}

  /** Runs this orchestrator drives now. */
  owned(): string[] {
    return [...this.runs.keys()];
  }

  /** True when the run exists and has not ended (whoever drives it). */
  async isOpen(runId: string): Promise<boolean> {
    const events = await this.ports.log.read(runId);
    return events.length > 0 && !TERMINAL.has(events[events.length - 1].type);
  }

  stateOf(runId: string): RunState | undefined {
    return this.runs.get(runId)?.state;
  }

  /** Called when a run this orchestrator drove has ended. */
  onRunEnded?: (runId: string) => void;

  /** Starts a deployment and waits for its plan; throws `RUN_EXISTS` for a run id that was used before. */
  async start(
    command: StartDeployment,
    extra: Pick<DeploymentRequested['data'], 'childOf' | 'tolerateNodeFailures'> = {},
  ): Promise<void> {
    const { planned } = await this.accept(command, extra);
    await planned;
  }

  /**
   * Records the request (`DeploymentRequested`) and returns with the planning going on in the
   * run's queue, so a command can be answered without waiting for a plan (and the commands after
   * it are not held up by a big plan or a planner that is away). `planned` settles when the plan
   * is accepted or refused; when it rejects (the log could not be written; already logged), the
   * next tick tries again: a caller need not wait for it or handle it. Throws `RUN_EXISTS` for a run id that was used before.
   */
  async accept(
    command: StartDeployment,
    extra: Pick<DeploymentRequested['data'], 'childOf' | 'tolerateNodeFailures'> = {},
  ): Promise<{ planned: Promise<void> }> {
    if (this.runs.has(command.runId) || (await this.ports.log.exists(command.runId))) {
      throw new CoordinatorError('RUN_EXISTS', `run ${command.runId} already exists`);
    }
    if (!(await this.ports.lease.acquire(command.runId)))
      throw new CoordinatorError('RUN_NOT_OWNED', `run ${command.runId} is driven by another orchestrator`);
    const run: ActiveRun = {
      state: initialRunState(command.runId),
      nodeStatus: new Map(),
      queue: Promise.resolve(),
      unsent: new Map(),
    };
    this.runs.set(command.runId, run);
    try {
      await this.serial(run, () =>
        this.apply(run, { type: 'RequestDeployment', request: { ...requestData(command), ...extra } }),
      );
    } catch (err) {
      // Nothing of the run is in the log: it does not exist.
      this.runs.delete(command.runId);
      await this.ports.lease.release(command.runId);
      throw err;
    }
    run.planRequest = command;
    return { planned: this.schedulePlan(run) };
  }

  /**
   * Asks for the run's plan in its queue; `run.planning` is set meanwhile. A failure is logged
   * here (the next tick tries again); the returned promise rejects with it for a caller that waits.
   */
  private schedulePlan(run: ActiveRun): Promise<void> {
    run.planning = true;
    const planned = this.serial(run, async () => {
      try {
        if (!run.planRequest || run.state.phase !== 'requested') return;
        await this.plan(run, run.planRequest);
        run.planRequest = undefined;
      } finally {
        run.planning = false;
      }
    });
    planned.catch((err: Error) =>
      this.ports.logger.error('planning failed; trying again on the next tick', {
        runId: run.state.runId,
        error: err.message,
      }),
    );
    return planned;
  }

  /** A new run of a finished run's plan with its failed (and dep_failed) task instances, or every unfinished one. */
  async retry(command: RetryFailed): Promise<void> {
    const events = await this.ports.log.read(command.runId);
    if (events.length === 0) throw new CoordinatorError('RUN_UNKNOWN', `run ${command.runId} does not exist`);
    if (isStrategyParent(events[0])) {
      const phases = events.flatMap((e) => (e.type === 'StrategyPhaseStarted' ? [e.data.childRunId] : []));
      throw new CoordinatorError(
        'RUN_NOT_RETRYABLE',
        `run ${command.runId} is a strategy run: retry its phase runs (${phases.join(', ') || 'none started'}), or deploy the strategy again`,
      );
    }
    const accepted = events.find((e) => e.type === 'PlanAccepted');
    const requested = events.find((e) => e.type === 'DeploymentRequested');
    if (!accepted || accepted.type !== 'PlanAccepted' || !requested || requested.type !== 'DeploymentRequested') {
      throw new CoordinatorError('RUN_NOT_RETRYABLE', `run ${command.runId} has no accepted plan to retry`);
    }
    const last = events[events.length - 1];
    if (!TERMINAL.has(last.type))
      throw new CoordinatorError(
        'RUN_NOT_RETRYABLE',
        `run ${command.runId} is still going; stop it first or wait for it to end`,
      );
    const plan = await this.ports.plans.load(accepted.data.planId);
    const old = foldRun(command.runId, events, plan);
    const keys: string[] = [];
    for (let i = 0; i < plan.size; i++) {
      if (plan.noWork[i]) continue;
      const s = old.status[i];
      const broken = s === InstanceStatus.Failed || s === InstanceStatus.DepFailed || s === InstanceStatus.TimedOut;
      const unfinished =
        broken || s === InstanceStatus.Pending || s === InstanceStatus.Dispatched || s === InstanceStatus.Running;
      if (command.failedOnly ? broken : unfinished) keys.push(plan.keys[i]);
    }
    if (await this.ports.log.exists(command.newRunId))
      throw new CoordinatorError('RUN_EXISTS', `run ${command.newRunId} already exists`);
    if (!(await this.ports.lease.acquire(command.newRunId)))
      throw new CoordinatorError('RUN_NOT_OWNED', `run ${command.newRunId} is driven by another orchestrator`);
    const run: ActiveRun = {
      state: initialRunState(command.newRunId),
      plan,
      nodeStatus: new Map(),
      queue: Promise.resolve(),
      unsent: new Map(),
    };
    this.runs.set(command.newRunId, run);
    await this.serial(run, async () => {
      await this.apply(run, {
        type: 'RequestDeployment',
        request: {
          ...requested.data,
          runId: command.newRunId,
          retryOf: { runId: command.runId, failedOnly: command.failedOnly },
        },
      });
      const offline = await this.ports.presence.offline(plan.nodeNames);
      await this.apply(run, {
        type: 'AcceptPlan',
        planId: accepted.data.planId,
        planHash: accepted.data.planHash,
        offlineNodes: offline,
        only: keys,
        at: this.now(),
      });
      await this.advance(run);
    });
  }

  async stop(runId: string): Promise<void> {
    const run = this.runs.get(runId) ?? (await this.whyNotDriven(runId, 'stop'));
    await this.serial(run, async () => {
      await this.apply(run, { type: 'Stop', at: this.now() });
      await this.advance(run);
    });
  }

  async resume(runId: string): Promise<void> {
    let run = this.runs.get(runId);
    if (!run) {
      // A stopped run is not driven by anyone: take it back.
      await this.recoverRun(runId, true);
      run = this.runs.get(runId) ?? (await this.whyNotDriven(runId, 'resume'));
    }
    const active = run;
    await this.serial(active, async () => {
      await this.apply(active, { type: 'Resume', at: this.now() });
      await this.advance(active);
    });
  }

  /** A task result or progress report from an agent; duplicates and stale attempts change nothing. */
  async progress(message: TaskProgressMessage): Promise<void> {
    await this.progressBatch([message]);
  }

  /**
   * Several reports at once: each run decides them in order and stores all resulting events
   * (and the dispatches they make possible) in one append, so a burst of results costs one
   * commit per run instead of three per result.
   */
  async progressBatch(messages: TaskProgressMessage[]): Promise<void> {
    const byRun = new Map<string, TaskProgressMessage[]>();
    for (const m of messages) byRun.set(m.runId, [...(byRun.get(m.runId) ?? []), m]);
    for (const [runId, batch] of byRun) {
      const run = this.runs.get(runId);
      if (!run) continue;
      await this.serial(run, async () => {
        await this.applyAll(run, [
          ...batch.map((message): RunCommand => ({ type: 'RecordProgress', message })),
          ...this.advanceCommands(),
        ]);
        await this.settle(run);
      });
    }
  }

  /** Periodic: timeouts, offline nodes, dispatch, completion, lease renewal. */
  async tick(): Promise<void> {
    for (const [runId, run] of [...this.runs]) {
      if (!(await this.ports.lease.renew(runId))) {
        // Another orchestrator took it, or Redis restarted and lost it: whoever holds it next
        // (this one, on its next recovery pass) goes on from the event log.
        this.ports.logger.warn(
          'lost the lease of a run (another orchestrator took it, or Redis lost it); letting go of it',
          { runId },
        );
        this.runs.delete(runId);
        continue;
      }
      // A run waiting for its plan is not waited for: the other runs' checks go on.
      if (run.planning) continue;
      if (run.state.phase === 'requested' && run.planRequest) {
        void this.schedulePlan(run);
        continue;
      }
      await this.serial(run, async () => {
        if (run.state.phase === 'requested') return;
        await this.resend(run);
        const offline = run.plan ? await this.ports.presence.offline(run.plan.nodeNames) : [];
        await this.apply(run, { type: 'CheckHealth', at: this.now(), offlineNodes: offline });
        await this.advance(run);
      });
    }
  }

  /**
   * Rebuilds every open run (strategy parents aside) whose lease it gets from the event log and
   * continues it. Runs another orchestrator drives cost a lease attempt, not a read of their
   * stream: this runs on every tick. `open` is a listing of `openRuns` to use instead of asking
   * for one (one listing per tick serves both coordinators).
   */
  async recover(open?: readonly OpenRun[]): Promise<string[]> {
    const recovered: string[] = [];
    for (const { runId, first } of open ?? (await this.ports.log.openRuns())) {
      if (this.runs.has(runId) || isStrategyParent(first)) continue;
      if (await this.recoverRun(runId, false)) recovered.push(runId);
    }
    return recovered;
  }

  private async recoverRun(runId: string, evenIfStopped: boolean): Promise<boolean> {
    const events = await leaseAndRead(this.ports, runId);
    if (!events) return false;
    const last = events[events.length - 1]?.type;
    // Gone, ended (by its driver, between the listing and the lease) or the strategy coordinator's.
    if (
      events.length === 0 ||
      (TERMINAL.has(last) && !(evenIfStopped && last === 'DeploymentStopped')) ||
      isStrategyParent(events[0])
    ) {
      await this.ports.lease.release(runId);
      if (events.length === 0) throw new CoordinatorError('RUN_UNKNOWN', `run ${runId} does not exist`);
      return false;
    }
    const accepted = events.find((e) => e.type === 'PlanAccepted');
    const plan = accepted?.type === 'PlanAccepted' ? await this.ports.plans.load(accepted.data.planId) : undefined;
    const state = foldRun(runId, events, plan);
    const run: ActiveRun = {
      state,
      plan,
      nodeStatus: plan ? knownNodeStatuses(state, plan) : new Map(),
      queue: Promise.resolve(),
      unsent: new Map(),
    };
    this.runs.set(runId, run);
    this.ports.logger.info('recovered run from the event log', { runId, events: events.length, phase: state.phase });
    await this.serial(run, async () => {
      if (state.phase === 'requested') {
        // Planning was interrupted. An environment can be planned again; inline inputs are not
        // kept in the log, so such a run is refused and the operator starts it again.
        const request = state.request;
        if (request?.envId) {
          // Planned in the run's queue after this (see the end of recoverRun).
          run.planRequest = {
            commandId: 'recovery',
            runId,
            envId: request.envId,
            graph: request.graph,
            filters: request.filters,
            dryRun: request.dryRun,
            noop: request.noop,
          };
        } else {
          await this.apply(run, {
            type: 'RefusePlan',
            code: 'PLANNING_INTERRUPTED',
            reason: 'the orchestrator restarted while planning inline inputs; start the deployment again',
          });
          await this.settle(run);
        }
        return;
      }
      // Dispatches that were recorded but maybe never sent: send them again (same dispatchId,
      // so JetStream and the agent's journal drop the copy if the first one went out).
      if (plan) {
        const again: TaskDispatchMessage[] = [];
        for (let n = 0; n < plan.nodeNames.length; n++) {
          const i = state.busy[n];
          if (i >= 0 && state.status[i] === InstanceStatus.Dispatched) again.push(this.dispatchMessage(run, plan, i));
        }
        await this.send(run, again);
      }
      // A stopped run taken back by `resume` waits for its Resume: advancing would settle it
      // (stopped is terminal) and let go of it again.
      if (state.phase !== 'stopped') await this.advance(run);
    });
    if (run.planRequest) void this.schedulePlan(run);
    return true;
  }

  private async plan(run: ActiveRun, command: StartDeployment): Promise<void> {
    let reply: PlanReplyMessage;
    let plan: ExecutablePlan | undefined;
    try {
      reply = await this.ports.plans.request({
        runId: run.state.runId,
        ...(command.envId ? { envId: command.envId } : {}),
        ...(command.inline ? { inline: command.inline } : {}),
        graph: command.graph,
        ...(command.filters ? { filters: { ...command.filters } } : {}),
      });
      if (reply.ok) plan = await this.ports.plans.load(reply.planId);
    } catch (err) {
      // No planner, or the plan store failed: the run ends refused instead of waiting forever.
      reply = {
        ok: false,
        code: err instanceof GranuleError ? err.code : 'PLANNING_FAILED',
        message: (err as Error).message,
      };
    }
    if (!reply.ok || !plan) {
      const refusal = reply.ok ? { code: 'PLANNING_FAILED', message: 'the plan could not be loaded' } : reply;
      await this.apply(run, { type: 'RefusePlan', code: refusal.code, reason: refusal.message });
      await this.settle(run);
      return;
    }
    run.plan = plan;
    const offline = await this.ports.presence.offline(run.plan.nodeNames);
    await this.apply(run, {
      type: 'AcceptPlan',
      planId: reply.planId,
      planHash: reply.planHash,
      offlineNodes: offline,
      at: this.now(),
    });
    await this.advance(run);
  }

  /** Dispatch what can run, then end the run if nothing is left. */
  private async advance(run: ActiveRun): Promise<void> {
    await this.applyAll(run, this.advanceCommands());
    await this.settle(run);
  }

  private advanceCommands(): RunCommand[] {
    const at = this.now();
    return [
      { type: 'DispatchReady', at, limits: this.options.limits },
      { type: 'Finish', at },
    ];
  }

  /** Lets go of a run that has ended. */
  private async settle(run: ActiveRun): Promise<void> {
    if (!['succeeded', 'failed', 'stopped', 'refused'].includes(run.state.phase)) return;
    this.ports.logger.info('run ended', { runId: run.state.runId, phase: run.state.phase });
    this.runs.delete(run.state.runId);
    await this.ports.lease.release(run.state.runId);
    this.onRunEnded?.(run.state.runId);
  }

  /** decide → append → evolve → act. Returns the events. */
  private apply(run: ActiveRun, command: RunCommand): Promise<RunEvent[]> {
    return this.applyAll(run, [command]);
  }

  /**
   * Decides the commands in order (each sees the state the previous ones left), stores every
   * resulting event in one append, and only then sends the dispatches. If the append fails, the
   * state is folded again from the log, so memory never holds events the log does not.
   */
  private async applyAll(run: ActiveRun, commands: RunCommand[]): Promise<RunEvent[]> {
    const before = run.state.version;
    const events: RunEvent[] = [];
    for (const command of commands) {
      const decided = decide(run.state, command, run.plan);
      for (const e of decided) run.state = evolve(run.state, e, run.plan);
      events.push(...decided);
    }
    if (events.length === 0) return events;
    const known = new Map(run.nodeStatus);
    const nodeEvents = run.plan ? nodeStatusChanges(run.state, run.plan, events, known, this.now()) : [];
    try {
      await this.ports.log.append(run.state.runId, events, before, { correlationId: run.state.runId }, nodeEvents);
    } catch (err) {
      // Memory is ahead of the log now. Fold it again from the log; when the log cannot be read
      // either (the database is down), the run stays stale and every later step folds it first.
      run.stale = true;
      await this.refold(run).catch(() => undefined);
      throw err;
    }
    run.nodeStatus = known;
    const plan = run.plan;
    if (plan) {
      const dispatches = events.flatMap((e) =>
        e.type === 'TaskDispatched' ? [this.dispatchMessage(run, plan, plan.index.get(e.data.key) as number)] : [],
      );
      await this.send(run, dispatches);
    }
    return events;
  }

  /**
   * Sends dispatches that are in the log. One the message stream does not accept (NATS is
   * unreachable, or slower than the publish timeout) is kept in `run.unsent` and sent again on
   * every tick: the events are committed, so failing the caller would only have the same
   * report recorded again, with no dispatch. A copy that did get through is dropped by its
   * message id (the dispatch id) or answered from the agent's journal.
   */
  private async send(run: ActiveRun, messages: TaskDispatchMessage[]): Promise<void> {
    if (messages.length === 0) return;
    const results = await Promise.allSettled(messages.map((m) => this.ports.dispatcher.dispatch(m)));
    const failed: string[] = [];
    let reason = '';
    results.forEach((r, k) => {
      const m = messages[k];
      if (r.status === 'fulfilled') {
        if (run.unsent.delete(m.dispatchId))
          this.ports.logger.info('sent a dispatch that could not be sent before', {
            runId: m.runId,
            dispatchId: m.dispatchId,
          });
        return;
      }
      if (!run.unsent.has(m.dispatchId)) failed.push(m.dispatchId);
      run.unsent.set(m.dispatchId, m);
      reason = (r.reason as Error)?.message ?? String(r.reason);
    });
    if (failed.length > 0) {
      this.ports.logger.warn('could not send dispatches; sending them again on every tick', {
        runId: run.state.runId,
        count: failed.length,
        dispatchIds: failed.slice(0, 10),
        error: reason,
      });
    }
  }

  /** Sends again the dispatches not sent yet whose task instance still waits for them. */
  private async resend(run: ActiveRun): Promise<void> {
    if (run.unsent.size === 0) return;
    const plan = run.plan;
    for (const [id, m] of run.unsent) {
      const i = plan?.index.get(m.key);
      const waiting =
        i !== undefined && run.state.status[i] === InstanceStatus.Dispatched && run.state.attempt[i] === m.attempt;
      if (!waiting) run.unsent.delete(id);
    }
    await this.send(run, [...run.unsent.values()]);
  }

  private dispatchMessage(run: ActiveRun, plan: ExecutablePlan, i: number): TaskDispatchMessage {
    const key = plan.keys[i];
    const attempt = run.state.attempt[i];
    return {
      runId: run.state.runId,
      key,
      task: plan.task[i],
      node: plan.nodeNames[plan.node[i]],
      type: plan.type[i],
      parameters: plan.parameters[i],
      attempt,
      dispatchId: `${run.state.runId}/${key}/${attempt}`,
      noop: run.state.request?.noop ?? false,
    };
  }

  /** Throws what the operator needs to know about a run this orchestrator does not drive. */
  private async whyNotDriven(runId: string, action: 'stop' | 'resume'): Promise<never> {
    const { code, message } = notDrivenReason(runId, await this.ports.log.read(runId), action, true);
    throw new CoordinatorError(code, message);
  }

  /** The run's state folded again from its events (memory may hold events the log does not). */
  private async refold(run: ActiveRun): Promise<void> {
    run.state = foldRun(run.state.runId, await this.ports.log.read(run.state.runId), run.plan);
    run.stale = false;
  }

  /**
   * Runs `work` after everything queued for the run. A stale run is folded from the log first;
   * while that fails, so does `work` (a report is then delivered again, a tick tried again).
   */
  private serial<T>(run: ActiveRun, job: () => Promise<T>): Promise<T> {
    const work = async (): Promise<T> => {
      if (run.stale) await this.refold(run);
      return job();
    };
    const next = run.queue.then(work, work);
    run.queue = next.catch(() => undefined);
    return next;
  }

  private now(): string {
    return this.ports.clock.now().toISOString();
  }
}
