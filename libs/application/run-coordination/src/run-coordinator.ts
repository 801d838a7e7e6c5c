import { GranuleError } from '@granule/core';
import type {
  CommandExpiry,
  DeploymentRequested,
  PlanReplyMessage,
  RetryFailed,
  RunEvent,
  StartDeployment,
  TaskDispatchMessage,
  TaskProgressMessage,
} from '@granule/contracts';
import { dispatchIdOf, isTerminalRunEvent, RunError, runUnknownMessage } from '@granule/run-events';
import {
  InstanceStatus,
  foldRun,
  holdsNodeLocks,
  knownNodeStatuses,
  nodeLockChanges,
  nodesToLock,
  nodeStatusChanges,
  runDecider,
} from '@granule/deployment-run';
import type { ExecutablePlan, ExecutionLimits, RunCommand, RunNodeStatus, RunState } from '@granule/deployment-run';
import { foldStrategyRun, isStrategyParent } from '@granule/strategy-run';
import type { PhaseRunOutcome } from '@granule/strategy-run';
import { DeciderDriver } from './decider-driver';
import type { DrivenStream, StreamProcess } from './decider-driver';
import type { CoordinatorPorts, NodeLockAppend, NodeLockView, OpenRun, SideEvent } from './ports';
import { requestData } from './request-data';
import { notDrivenReason } from './run-recovery';

/** What a run keeps in memory besides its folded state. */
interface RunLocal {
  /** What this run has said of each node (NodeStatusChanged), by node index. */
  nodeStatus: Map<number, RunNodeStatus>;
  /**
   * Dispatches recorded in the log that the message stream has not accepted yet (NATS was
   * unreachable), by dispatch id: sent again on every tick until they get through.
   */
  unsent: Map<string, TaskDispatchMessage>;
  /**
   * When the message stream accepted each dispatch not started yet (epoch ms, by task key): a
   * task's budget runs from then, not from its TaskDispatched, which may be long before when
   * thousands leave at once (ADR 0034). Dropped once the task has started or ended.
   */
  sentAt: Map<string, number>;
  /** The request to plan, kept until a plan is accepted or refused (a failed try is made again on a tick). */
  planRequest?: StartDeployment;
  /** A plan is being asked for (it may take a while: a big plan, a planner that is away). */
  planning?: boolean;
  /** The run holds its nodes' locks (ADR 0024): what the log says, as of the last append. */
  locksHeld: boolean;
  /** The lock streams' versions the pending decision read (a NodeLocked is appended at them). */
  lockVersions: Map<string, number>;
}

type RunStream = DrivenStream<RunState, ExecutablePlan | undefined, RunLocal>;

export interface CoordinatorOptions {
  limits: ExecutionLimits;
}

/** Extra facts of a run the orchestrator starts itself (a strategy's phase runs). */
export type RunStartExtra = Pick<
  DeploymentRequested['data'],
  'childOf' | 'tolerateNodeFailures' | 'requestedBy' | 'retryOf' | 'waitForLocks'
>;

/** How a run ended, in the terms a strategy run judges its phase runs by. */
export function outcomeOfRun(state: RunState): PhaseRunOutcome {
  const plan = state.plan;
  const failedNodes = plan ? [...state.failedNodes].map((n) => plan.nodeNames[n]) : [];
  switch (state.phase) {
    case 'succeeded':
      return { end: 'succeeded', failedNodes };
    case 'stopped':
      return { end: 'stopped', failedNodes };
    case 'refused':
      return {
        end: 'refused',
        failedNodes,
        ...(state.refusalCode ? { refusalCode: state.refusalCode } : {}),
        ...(state.terminalReason ? { reason: state.terminalReason } : {}),
      };
    default:
      return { end: 'failed', failedNodes };
  }
}

/**
 * Drives deployment runs with the generic decider driver: the run decider
 * (`@granule/deployment-run`) decides, the log records, and only then are dispatches sent, so
 * a restarted orchestrator rebuilds each open run by folding its events (`recover`). This class
 * adds what is particular to runs: planning in the run's queue, dispatches kept until NATS takes
 * them, node statuses recorded with the run's events, retries.
 */
export class RunCoordinator {
  private readonly driver: DeciderDriver<
    RunState,
    RunCommand,
    RunEvent,
    ExecutablePlan | undefined,
    RunLocal,
    SideEvent
  >;

  /** Called when a run this orchestrator drove has ended, with how it ended. */
  onRunEnded?: (runId: string, outcome: PhaseRunOutcome, request: DeploymentRequested['data'] | undefined) => void;

  constructor(
    private readonly ports: CoordinatorPorts,
    private readonly options: CoordinatorOptions,
  ) {
    const process: StreamProcess<RunState, RunCommand, RunEvent, ExecutablePlan | undefined, RunLocal, SideEvent> = {
      decider: runDecider,
      loadContext: async (_id, events) => {
        const accepted = events.find((e) => e.type === 'PlanAccepted');
        if (accepted?.type === 'PlanAccepted') return this.ports.plans.load(accepted.data.planId);
        // A run queued behind other runs' nodes waits with the plan it is to run.
        const queued = events.findLast((e) => e.type === 'DeploymentQueued');
        const planId = queued?.type === 'DeploymentQueued' ? queued.data.plan?.planId : undefined;
        return planId ? this.ports.plans.load(planId) : undefined;
      },
      newLocal: () => ({
        nodeStatus: new Map(),
        unsent: new Map(),
        sentAt: new Map(),
        locksHeld: false,
        lockVersions: new Map(),
      }),
      alongside: (run, events) => {
        // Only a run whose plan was accepted speaks of nodes: a queued run knows its plan but has
        // touched nothing (stopping it says nothing of its nodes).
        const plan = run.state.plan ? run.context : undefined;
        if (!plan) return undefined;
        const at = this.now();
        const known = new Map(run.local.nodeStatus);
        // A check run (ADR 0031) or a noop run changed no node: it says nothing of their status
        // (a task failing in noop leaves its node as the last real deployment left it).
        const changesNothing = run.state.request?.check || run.state.request?.noop;
        const changes = changesNothing ? [] : nodeStatusChanges(run.state, plan, events, known, at);
        const locks = nodeLockChanges(run.state, events, run.local.locksHeld, at);
        const versions = run.local.lockVersions;
        const lockAppends = locks.events.map((e): NodeLockAppend => ({
          ...e,
          expectedVersion: e.type === 'NodeLocked' ? (versions.get(e.data.uid) ?? 0) : 'any',
        }));
        return {
          events: [...changes, ...lockAppends],
          recorded: () => {
            run.local.nodeStatus = known;
            run.local.locksHeld = locks.held;
          },
        };
      },
      react: async (run, events) => {
        const plan = run.context;
        if (!plan) return;
        const dispatches = events.flatMap((e) =>
          e.type === 'TaskDispatched' ? [this.dispatchMessage(run, plan, plan.index.get(e.data.key) as number)] : [],
        );
        await this.send(run, dispatches);
      },
      ended: (run) => {
        this.ports.logger.info('run ended', { runId: run.id, phase: run.state.phase });
        this.onRunEnded?.(run.id, outcomeOfRun(run.state), run.state.request);
      },
    };
    this.driver = new DeciderDriver(process, ports);
  }

  /** Runs this orchestrator drives now. */
  owned(): string[] {
    return this.driver.ids();
  }

  drives(runId: string): boolean {
    return this.driver.has(runId);
  }

  /** True when the run exists and has not ended (whoever drives it). */
  async isOpen(runId: string): Promise<boolean> {
    const last = await this.ports.log.lastEventType(runId);
    return last !== undefined && !isTerminalRunEvent(last);
  }

  stateOf(runId: string): RunState | undefined {
    return this.driver.get(runId)?.state;
  }

  /** Starts a deployment and waits for its plan; throws `RUN_EXISTS` for a run id that was used before. */
  async start(command: StartDeployment, extra: RunStartExtra = {}): Promise<void> {
    const { planned } = await this.accept(command, extra);
    await planned;
  }

  /**
   * Records the request (`DeploymentRequested`) and returns with the planning going on in the
   * run's queue, so a command can be answered without waiting for a plan (and the commands after
   * it are not held up by a big plan or a planner that is away). `planned` settles when the plan
   * is accepted or refused; when it rejects (the log could not be written; already logged), the
   * next tick tries again: a caller need not wait for it or handle it. Throws `RUN_EXISTS` for a
   * run id that was used before.
   */
  async accept(
    command: StartDeployment,
    extra: RunStartExtra = {},
    metadata?: Record<string, unknown>,
  ): Promise<{ planned: Promise<void> }> {
    const run = await this.driver.create(
      command.runId,
      [{ type: 'RequestDeployment', request: { ...requestData(command), ...extra } }],
      undefined,
      metadata,
    );
    run.local.planRequest = command;
    return { planned: this.schedulePlan(run) };
  }

  /**
   * Asks for the run's plan in its queue; `planning` is set meanwhile. A failure is logged
   * here (the next tick tries again); the returned promise rejects with it for a caller that waits.
   */
  private schedulePlan(run: RunStream): Promise<void> {
    run.local.planning = true;
    const planned = this.driver.run(run, async () => {
      try {
        const request = run.local.planRequest;
        if (!request || run.state.phase !== 'requested') return;
        await this.plan(run, request);
        run.local.planRequest = undefined;
      } finally {
        run.local.planning = false;
      }
    });
    planned.catch((err: Error) =>
      this.ports.logger.error('planning failed; trying again on the next tick', { runId: run.id, error: err.message }),
    );
    return planned;
  }

  /**
   * Records a run whose command expired before this orchestrator found it: its request and
   * `DeploymentExpired`, nothing else; it never runs. An id used before is left alone.
   */
  async expire(
    command: StartDeployment,
    expiry: CommandExpiry,
    extra: RunStartExtra = {},
    metadata?: Record<string, unknown>,
  ): Promise<void> {
    try {
      await this.driver.create(
        command.runId,
        [{ type: 'ExpireRequest', request: { ...requestData(command), ...extra }, expiry }],
        undefined,
        metadata,
      );
    } catch (err) {
      if (!(err instanceof RunError && err.code === 'RUN_EXISTS')) throw err;
    }
  }

  /** A new run of a finished run's plan with its failed (and dep_failed) task instances, or every unfinished one. */
  async retry(command: RetryFailed, requestedBy?: string, metadata?: Record<string, unknown>): Promise<void> {
    const events = await this.ports.log.read(command.runId);
    if (events.length === 0) throw new RunError('RUN_UNKNOWN', runUnknownMessage(command.runId));
    if (isStrategyParent(events[0])) {
      const phases = foldStrategyRun(command.runId, events).phaseRuns;
      throw new RunError(
        'RUN_NOT_RETRYABLE',
        `run ${command.runId} is a strategy run: retry its phase runs (${phases.join(', ') || 'none started'}), or deploy the strategy again`,
      );
    }
    const accepted = events.find((e) => e.type === 'PlanAccepted');
    const requested = events.find((e) => e.type === 'DeploymentRequested');
    if (accepted?.type !== 'PlanAccepted' || requested?.type !== 'DeploymentRequested')
      throw new RunError('RUN_NOT_RETRYABLE', `run ${command.runId} has no accepted plan to retry`);
    if (!isTerminalRunEvent(events[events.length - 1].type))
      throw new RunError(
        'RUN_NOT_RETRYABLE',
        `run ${command.runId} is still going; stop it first or wait for it to end`,
      );
    const plan = await this.ports.plans.load(accepted.data.planId);
    const old = foldRun(command.runId, events, plan);
    const keys: string[] = [];
    let leftPending = 0;
    for (let i = 0; i < plan.size; i++) {
      if (plan.noWork[i]) continue;
      const s = old.status[i];
      const broken = s === InstanceStatus.Failed || s === InstanceStatus.DepFailed || s === InstanceStatus.TimedOut;
      const unfinished =
        broken || s === InstanceStatus.Pending || s === InstanceStatus.Dispatched || s === InstanceStatus.Running;
      if (command.failedOnly ? broken : unfinished) keys.push(plan.keys[i]);
      else if (unfinished) leftPending++;
    }
    // A retry with nothing to run would be a run that does nothing: refused, and no run recorded.
    if (keys.length === 0)
      throw new RunError(
        'RUN_NOT_RETRYABLE',
        leftPending > 0
          ? `run ${command.runId} has no failed task instance to retry; --all-unfinished reruns the ${leftPending} that did not run`
          : `run ${command.runId} has nothing to retry: every task instance succeeded or was skipped`,
      );
    const offline = await this.ports.presence.offline(plan.nodeNames);
    // The retry waits for locks only if its own command says so.
    const { waitForLocks: _wait, ...request } = requested.data;
    const nodes = nodesToLock(plan, keys);
    await this.withLocks(nodes, (view) =>
      this.driver.create(
        command.newRunId,
        [
          {
            type: 'RequestDeployment',
            request: {
              ...request,
              runId: command.newRunId,
              retryOf: { runId: command.runId, failedOnly: command.failedOnly },
              ...(requestedBy ? { requestedBy } : {}),
              ...(command.waitForLocks ? { waitForLocks: true } : {}),
            },
          },
          {
            type: 'AcceptPlan',
            planId: accepted.data.planId,
            planHash: accepted.data.planHash,
            offlineNodes: offline,
            only: keys,
            at: this.now(),
            holders: view.holders,
          },
          ...this.advanceCommands(),
        ],
        plan,
        metadata,
        (local) => (local.lockVersions = view.versions),
      ),
    );
  }

  /**
   * Reads who holds `nodes` and runs `step` with it (a decision that may take them). When the
   * append fails because another run took one of the nodes meanwhile (its lock stream moved:
   * the append's expected version no longer holds), reads again and decides again, so the loser
   * of a race is refused or queued naming the winner instead of failing. Any other failure is
   * thrown.
   */
  private async withLocks<T>(nodes: readonly string[], step: (view: NodeLockView) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const view = await this.ports.locks.read(nodes);
      try {
        return await step(view);
      } catch (err) {
        if (attempt >= 5 || nodes.length === 0) throw err;
        const now = await this.ports.locks.read(nodes);
        const moved = nodes.some((n) => (now.versions.get(n) ?? 0) !== (view.versions.get(n) ?? 0));
        if (!moved) throw err;
        this.ports.logger.info('another run took a node while this one was deciding; deciding again', {
          nodes: nodes.length,
        });
      }
    }
  }

  /** Stops a run; `requestedBy`, the authenticated operator who asked, is recorded with the stop. */
  async stop(runId: string, metadata?: Record<string, unknown>, requestedBy?: string): Promise<void> {
    const run = this.driver.get(runId) ?? (await this.whyNotDriven(runId, 'stop'));
    await this.driver.run(run, () =>
      this.driver.execute(
        run,
        [{ type: 'Stop', at: this.now(), ...(requestedBy ? { requestedBy } : {}) }, ...this.advanceCommands()],
        metadata,
      ),
    );
  }

  /**
   * Resumes a stopped run. A node another run took meanwhile refuses it (`NODES_LOCKED`), or
   * queues it with `wait` (ADR 0024); a run refused so is let go again. `requestedBy`: the
   * authenticated operator who asked, recorded with the resume.
   */
  async resume(runId: string, metadata?: Record<string, unknown>, wait = false, requestedBy?: string): Promise<void> {
    // A stopped run is not driven by anyone: take it back.
    const run = this.driver.get(runId) ?? (await this.adopt(runId, true)) ?? (await this.whyNotDriven(runId, 'resume'));
    try {
      await this.driver.run(run, () => this.resumeStep(run, wait, metadata, requestedBy));
    } finally {
      if (run.state.phase === 'stopped') await this.driver.release(runId);
    }
  }

  private resumeStep(
    run: RunStream,
    wait: boolean,
    metadata?: Record<string, unknown>,
    requestedBy?: string,
  ): Promise<unknown> {
    return this.withLocks(run.state.lockedNodes ?? [], (view) => {
      this.checkFresh(run);
      run.local.lockVersions = view.versions;
      return this.driver.execute(
        run,
        [
          { type: 'Resume', at: this.now(), holders: view.holders, wait, ...(requestedBy ? { requestedBy } : {}) },
          ...this.advanceCommands(),
        ],
        metadata,
      );
    });
  }

  /** Accepts the plan of a run that was requested or waits in the queue, with who holds its nodes now. */
  private acceptStep(
    run: RunStream,
    plan: ExecutablePlan,
    accepted: { planId: string; planHash: string; only?: string[] },
  ): Promise<unknown> {
    return this.withLocks(nodesToLock(plan, accepted.only), async (view) => {
      this.checkFresh(run);
      const offline = await this.ports.presence.offline(plan.nodeNames);
      run.local.lockVersions = view.versions;
      return this.driver.execute(run, [
        { type: 'AcceptPlan', ...accepted, offlineNodes: offline, at: this.now(), holders: view.holders },
        ...this.advanceCommands(),
      ]);
    });
  }

  /** A failed append left the run stale (its log could not be read again): decide nothing on it. */
  private checkFresh(run: RunStream): void {
    if (run.stale) throw new Error(`run ${run.id}: the event log could not be read after a failed append`);
  }

  /** A queued run tries again: it starts (or resumes) once nobody else holds its nodes. */
  private async dequeue(run: RunStream): Promise<void> {
    const queued = run.state.queued;
    if (!queued) return;
    if (queued.resume) {
      // The operator who asked for the resume is recorded with it when it happens.
      await this.resumeStep(run, true, undefined, queued.requestedBy);
      return;
    }
    if (run.context && queued.plan) await this.acceptStep(run, run.context, queued.plan);
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
      const run = this.driver.get(runId);
      if (!run) continue;
      await this.driver.run(run, () =>
        this.driver.execute(run, [
          ...batch.map((message): RunCommand => ({ type: 'RecordProgress', message })),
          ...this.advanceCommands(),
        ]),
      );
    }
  }

  /** Periodic: lease renewal, timeouts, offline nodes, dispatch, completion, planning tried again. */
  async tick(): Promise<void> {
    for (const run of await this.driver.renewLeases()) {
      // A run waiting for its plan is not waited for: the other runs' checks go on.
      if (run.local.planning) continue;
      if (run.state.phase === 'requested' && run.local.planRequest) {
        void this.schedulePlan(run);
        continue;
      }
      await this.driver.run(run, async () => {
        if (run.state.phase === 'requested') return;
        if (run.state.phase === 'queued') return this.dequeue(run);
        await this.resend(run);
        const offline = run.context ? await this.ports.presence.offline(run.context.nodeNames) : [];
        await this.driver.execute(run, [
          {
            type: 'CheckHealth',
            at: this.now(),
            offlineNodes: offline,
            dispatchSentAt: run.local.sentAt,
            dispatchUnsent: new Set([...run.local.unsent.values()].map((m) => m.key)),
          },
          ...this.advanceCommands(),
        ]);
      });
    }
  }

  /**
   * Takes up the open runs of `open` that nobody drives (strategy parents aside, and phase runs
   * whose strategy run `takesPhaseRun` refuses: a phase run is driven where its strategy run is).
   * Runs another orchestrator drives cost a lease attempt, not a read of their stream: this runs
   * on every tick.
   */
  async recover(
    open?: readonly OpenRun[],
    takesPhaseRun: (parentRunId: string) => boolean = () => true,
  ): Promise<string[]> {
    const recovered: string[] = [];
    for (const { runId, first } of open ?? (await this.ports.log.openRuns())) {
      if (this.driver.has(runId) || isStrategyParent(first)) continue;
      const parent = first.type === 'DeploymentRequested' ? first.data.childOf?.runId : undefined;
      if (parent !== undefined && !takesPhaseRun(parent)) continue;
      if (await this.adopt(runId, false)) recovered.push(runId);
    }
    return recovered;
  }

  /** Takes up one run from the log (recovery, a strategy run's phase run, a resume). */
  async adopt(runId: string, evenIfStopped: boolean): Promise<RunStream | undefined> {
    let existed = true;
    const run = await this.driver.adopt(runId, (events) => {
      existed = events.length > 0;
      const last = events[events.length - 1]?.type;
      // Gone, ended (by its driver, between the listing and the lease) or a strategy run.
      return (
        existed &&
        !(isTerminalRunEvent(last) && !(evenIfStopped && last === 'DeploymentStopped')) &&
        !isStrategyParent(events[0])
      );
    });
    if (!existed) throw new RunError('RUN_UNKNOWN', runUnknownMessage(runId));
    if (!run) return undefined;
    const { state, context: plan } = run;
    if (plan) run.local.nodeStatus = knownNodeStatuses(state, plan);
    run.local.locksHeld = await this.holdsLocksInLog(runId, state);
    this.ports.logger.info('recovered run from the event log', { runId, events: run.version, phase: state.phase });
    await this.driver.run(run, async () => {
      if (state.phase === 'requested') {
        // Planning was interrupted. An environment, or inputs the CLI stored (the log names them),
        // can be planned again; inline inputs sent in the command are not kept in the log, so
        // such a run is refused and the operator starts it again.
        const request = state.request;
        if (request?.envId || request?.inputs) {
          run.local.planRequest = {
            commandId: 'recovery',
            runId,
            ...(request.envId ? { envId: request.envId } : { inputs: request.inputs }),
            graph: request.graph,
            filters: request.filters,
            dryRun: request.dryRun,
            noop: request.noop,
            ...(request.check ? { check: true, ...(request.diff ? { diff: true } : {}) } : {}),
          };
        } else {
          await this.driver.execute(run, [
            {
              type: 'RefusePlan',
              code: 'PLANNING_INTERRUPTED',
              reason: 'the orchestrator restarted while planning inline inputs; start the deployment again',
            },
          ]);
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
      if (state.phase !== 'stopped') await this.driver.execute(run, this.advanceCommands());
    });
    if (run.local.planRequest) void this.schedulePlan(run);
    return run;
  }

  /**
   * Whether a run taken up from the log holds its nodes' locks: its state says so, and the lock
   * streams agree (a run planned before locks existed holds none, and must release none when it
   * ends: a newer run may hold its nodes). When the lock streams cannot be read, the state decides.
   */
  private async holdsLocksInLog(runId: string, state: RunState): Promise<boolean> {
    if (!holdsNodeLocks(state)) return false;
    const nodes = state.lockedNodes ?? [];
    try {
      const { holders } = await this.ports.locks.read(nodes);
      return nodes.length === 0 || nodes.some((n) => holders.get(n) === runId);
    } catch {
      return true;
    }
  }

  /** Lets go of a run without ending it (its strategy run is driven elsewhere, or shutdown). */
  release(runId: string): Promise<void> {
    return this.driver.release(runId);
  }

  releaseAll(): Promise<void> {
    return this.driver.releaseAll();
  }

  /**
   * Renews the leases of the runs driven here now, without waiting for any run's work: a run
   * whose work waits on a slow NATS (thousands of dispatches whose acks take seconds) must not
   * lose its lease meanwhile, as it did when only the tick renewed, behind that work.
   */
  async renewLeases(): Promise<void> {
    await this.driver.renewLeases();
  }

  private async plan(run: RunStream, command: StartDeployment): Promise<void> {
    let reply: PlanReplyMessage;
    let plan: ExecutablePlan | undefined;
    try {
      reply = await this.ports.plans.request({
        runId: run.id,
        ...(command.envId ? { envId: command.envId } : {}),
        ...(command.inline ? { inline: command.inline } : {}),
        ...(command.inputs ? { inputs: command.inputs } : {}),
        graph: command.graph,
        ...(command.filters ? { filters: { ...command.filters } } : {}),
      });
      if (reply.ok) plan = await this.ports.plans.load(reply.result.planId);
    } catch (err) {
      // No planner, or the plan store failed: the run ends refused instead of waiting forever.
      reply = {
        ok: false,
        error: { code: err instanceof GranuleError ? err.code : 'PLANNING_FAILED', message: (err as Error).message },
      };
    }
    if (!reply.ok || !plan) {
      const refusal = reply.ok ? { code: 'PLANNING_FAILED', message: 'the plan could not be loaded' } : reply.error;
      await this.driver.execute(run, [{ type: 'RefusePlan', code: refusal.code, reason: refusal.message }]);
      return;
    }
    run.context = plan;
    await this.acceptStep(run, plan, { planId: reply.result.planId, planHash: reply.result.planHash });
  }

  /** Dispatch what can run, then end the run if nothing is left. */
  private advanceCommands(): RunCommand[] {
    const at = this.now();
    return [
      { type: 'DispatchReady', at, limits: this.options.limits },
      { type: 'Finish', at },
    ];
  }

  /**
   * Sends dispatches that are in the log. One the message stream does not accept (NATS is
   * unreachable, or slower than the publish timeout) is kept in `unsent` and sent again on
   * every tick: the events are committed, so failing the caller would only have the same
   * report recorded again, with no dispatch. A copy that did get through is dropped by its
   * message id (the dispatch id) or answered from the agent's journal.
   */
  private async send(run: RunStream, messages: TaskDispatchMessage[]): Promise<void> {
    if (messages.length === 0) return;
    const { unsent, sentAt } = run.local;
    const results = await Promise.allSettled(
      messages.map((m) =>
        this.ports.dispatcher.dispatch(m).then(() => sentAt.set(m.key, this.ports.clock.now().getTime())),
      ),
    );
    const failed: string[] = [];
    let reason = '';
    results.forEach((r, k) => {
      const m = messages[k];
      if (r.status === 'fulfilled') {
        if (unsent.delete(m.dispatchId))
          this.ports.logger.info('sent a dispatch that could not be sent before', {
            runId: m.runId,
            dispatchId: m.dispatchId,
          });
        return;
      }
      if (!unsent.has(m.dispatchId)) failed.push(m.dispatchId);
      unsent.set(m.dispatchId, m);
      reason = (r.reason as Error)?.message ?? String(r.reason);
    });
    if (failed.length > 0) {
      this.ports.logger.warn('could not send dispatches; sending them again on every tick', {
        runId: run.id,
        count: failed.length,
        dispatchIds: failed.slice(0, 10),
        error: reason,
      });
    }
  }

  /** Sends again the dispatches not sent yet whose task instance still waits for them. */
  private async resend(run: RunStream): Promise<void> {
    const { unsent, sentAt } = run.local;
    for (const key of sentAt.keys()) {
      const i = run.context?.index.get(key);
      if (i === undefined || run.state.status[i] !== InstanceStatus.Dispatched) sentAt.delete(key);
    }
    if (unsent.size === 0) return;
    for (const [id, m] of unsent) {
      const i = run.context?.index.get(m.key);
      const waiting =
        i !== undefined && run.state.status[i] === InstanceStatus.Dispatched && run.state.attempt[i] === m.attempt;
      if (!waiting) unsent.delete(id);
    }
    await this.send(run, [...unsent.values()]);
  }

  private dispatchMessage(run: RunStream, plan: ExecutablePlan, i: number): TaskDispatchMessage {
    const key = plan.keys[i];
    const attempt = run.state.attempt[i];
    return {
      runId: run.id,
      key,
      task: plan.task[i],
      node: plan.nodeNames[plan.node[i]],
      type: plan.type[i],
      parameters: plan.parameters[i],
      attempt,
      dispatchId: dispatchIdOf(run.id, key, attempt),
      // A check dispatch is a noop one too: an agent that does not know check mode changes nothing either.
      noop: (run.state.request?.noop || run.state.request?.check) ?? false,
      ...(run.state.request?.check ? { check: true, ...(run.state.request.diff ? { diff: true } : {}) } : {}),
    };
  }

  /** Throws what the operator needs to know about a run this orchestrator does not drive. */
  private async whyNotDriven(runId: string, action: 'stop' | 'resume'): Promise<never> {
    const { code, message } = notDrivenReason(runId, await this.ports.log.read(runId), action, true);
    throw new RunError(code, message);
  }

  private now(): string {
    return this.ports.clock.now().toISOString();
  }
}
