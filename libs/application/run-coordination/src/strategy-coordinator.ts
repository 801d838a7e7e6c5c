import { GranuleError } from '@granule/core';
import type { RunEvent, StartDeployment, StrategyRef } from '@granule/contracts';
import { TERMINAL_RUN_EVENTS } from '@granule/contracts';
import { applyResult, buildReport, createStrategyRun, nextAction, planStrategy } from '@granule/deployment-strategy';
import type { DeploymentStrategy, StrategyAction, StrategyPlan, StrategyRunState } from '@granule/deployment-strategy';
import type { NodeSpec } from '@granule/task-model';
import type { CoordinatorPorts, OpenRun } from './ports';
import type { RunCoordinator } from './run-coordinator';
import { requestData } from './request-data';
import { isStrategyParent, leaseAndRead, notDrivenReason } from './run-recovery';

/** Finds the strategy document and the nodes its selectors look at. */
export interface StrategySource {
  resolve(
    ref: StrategyRef,
    request: { envId?: string; inlineNodes?: unknown[] },
  ): Promise<{ strategy: DeploymentStrategy; nodes: NodeSpec[] }>;
}

interface StrategyRun {
  runId: string;
  version: number;
  request: StartDeployment;
  plan: StrategyPlan;
  state: StrategyRunState;
  /** The phase run being waited for. */
  pending?: { action: StrategyAction; childRunId: string };
  /** A stop was requested (DeploymentStopRequested): no phase starts; the run ends stopped once its phase run has. */
  stopping: boolean;
  queue: Promise<unknown>;
}

/**
 * Stops and resumes phase runs. The default goes to the RunCoordinator given; an orchestrator
 * with replicas sends a stop for a phase run another replica drives through the command stream.
 */
export interface PhaseRunControl {
  stop(runId: string): Promise<void>;
  resume(runId: string): Promise<void>;
}

const TERMINAL = new Set<string>(TERMINAL_RUN_EVENTS);
/** Phase runs: prepare runs the release's provisioning graph, deploy its default graph. */
export const PHASE_GRAPHS = { prepare: 'provisioning', deploy: 'default' } as const;

export class StrategyRunError extends GranuleError<
  'STRATEGY_UNRESOLVED' | 'RUN_EXISTS' | 'RUN_UNKNOWN' | 'RUN_ENDED' | 'RUN_NOT_OWNED'
> {}

/**
 * Drives strategy runs (seed 004): groups one at a time, each phase as a run of its own (the
 * child run) on the group's nodes, with node failures tolerated there; the strategy state
 * machine judges the group by its success criteria and picks the next phase. The parent's
 * events record the plan of groups, each phase's start and outcome and the final report, so a
 * restarted orchestrator continues where the parent stood.
 *
 * A stop (of the strategy run, or of its phase run by the operator) stops the phase run
 * gracefully and ends the strategy run stopped with that phase still pending; a resume resumes
 * the phase run and goes on from there.
 */
export class StrategyCoordinator {
  private readonly runs = new Map<string, StrategyRun>();
  /** Runs `start` is recording: `recover` must not take them (this orchestrator holds their lease). */
  private readonly starting = new Set<string>();

  private readonly phases: PhaseRunControl;

  constructor(
    private readonly ports: CoordinatorPorts,
    private readonly strategies: StrategySource,
    private readonly children: RunCoordinator,
    phases?: PhaseRunControl,
  ) {
    this.phases = phases ?? { stop: (runId) => children.stop(runId), resume: (runId) => children.resume(runId) };
  }

  /** Whether `runId` is a strategy run (its first event asks for a strategy). */
  async isStrategyRun(runId: string): Promise<boolean> {
    if (this.runs.has(runId)) return true;
    const events = await this.ports.log.read(runId);
    return events.length > 0 && isStrategyParent(events[0]);
  }

  /** Stops a strategy run this orchestrator drives: its phase run stops gracefully, then the run ends stopped. */
  async stop(runId: string): Promise<void> {
    const run = this.runs.get(runId) ?? (await this.whyNotDriven(runId, 'stop'));
    await this.serial(run, async () => {
      if (!run.stopping) await this.requestStop(run, 'stopped by the operator');
      await this.advance(run);
    });
  }

  /** Resumes a stopped (or stopping) strategy run: its pending phase run is resumed and the strategy goes on. */
  async resume(runId: string): Promise<void> {
    let run = this.runs.get(runId);
    if (!run) {
      const events = await leaseAndRead(this.ports, runId);
      if (!events) throw new StrategyRunError('RUN_NOT_OWNED', `run ${runId} is driven by another orchestrator`);
      const last = events[events.length - 1]?.type;
      const folded = last === 'DeploymentStopped' ? this.fold(runId, events) : undefined;
      if (!folded) {
        await this.ports.lease.release(runId);
        return this.whyNotDriven(runId, 'resume');
      }
      run = folded;
      this.runs.set(runId, run);
    }
    const active = run;
    await this.serial(active, async () => {
      if (!active.stopping) return;
      await this.append(active, [{ type: 'DeploymentResumed', data: { at: this.ports.clock.now().toISOString() } }]);
      active.stopping = false;
      // A phase run that was never created is started by `advance`; one that ended on its own is judged there.
      const phase = active.pending ? await this.ports.log.read(active.pending.childRunId) : [];
      if (active.pending && phase.length > 0 && phaseEnd(phase) !== 'succeeded_or_failed')
        await this.phases.resume(active.pending.childRunId);
      await this.advance(active);
    });
  }

  owned(): string[] {
    return [...this.runs.keys()];
  }

  async start(command: StartDeployment): Promise<void> {
    if (
      this.runs.has(command.runId) ||
      this.starting.has(command.runId) ||
      (await this.ports.log.exists(command.runId))
    )
      throw new StrategyRunError('RUN_EXISTS', `run ${command.runId} already exists`);
    if (!(await this.ports.lease.acquire(command.runId)))
      throw new StrategyRunError('RUN_NOT_OWNED', `run ${command.runId} is driven by another orchestrator`);
    // Open in the log from its first event on, but not in `runs` until accepted: a recovery pass
    // meanwhile (same lease holder) would otherwise fold a second copy of it and both would append.
    this.starting.add(command.runId);
    try {
      await this.record(command);
    } finally {
      this.starting.delete(command.runId);
    }
  }

  private async record(command: StartDeployment): Promise<void> {
    let version = await this.ports.log.append(
      command.runId,
      [{ type: 'DeploymentRequested', data: requestData(command) }],
      0,
    );
    let resolved: { strategy: DeploymentStrategy; nodes: NodeSpec[] };
    let plan: StrategyPlan;
    try {
      resolved = await this.strategies.resolve(command.strategy as StrategyRef, {
        envId: command.envId,
        inlineNodes: command.inline?.nodes,
      });
      plan = planStrategy(resolved.strategy, resolved.nodes);
    } catch (err) {
      const code = err instanceof GranuleError ? err.code : 'STRATEGY_UNRESOLVED';
      await this.ports.log.append(
        command.runId,
        [{ type: 'DeploymentRefused', data: { code, reason: (err as Error).message } }],
        version,
      );
      await this.ports.lease.release(command.runId);
      return;
    }
    version = await this.ports.log.append(
      command.runId,
      [
        {
          type: 'StrategyAccepted',
          data: {
            plan: plan as unknown as { order: string[]; groups: unknown[]; nodes: string[] },
            ...(command.inline ? { inline: command.inline } : {}),
          },
        },
      ],
      version,
    );
    const run: StrategyRun = {
      runId: command.runId,
      version,
      request: command,
      plan,
      state: createStrategyRun(plan),
      stopping: false,
      queue: Promise.resolve(),
    };
    this.runs.set(command.runId, run);
    await this.serial(run, () => this.advance(run));
  }

  /** Periodic: renews leases and notices phase runs that ended. */
  async tick(): Promise<void> {
    for (const [runId, run] of [...this.runs]) {
      if (!(await this.ports.lease.renew(runId))) {
        this.runs.delete(runId);
        continue;
      }
      await this.serial(run, () => this.advance(run));
    }
  }

  /** A phase run ended (fast path; `tick` notices it too). */
  async childEnded(childRunId: string): Promise<void> {
    const run = [...this.runs.values()].find((r) => r.pending?.childRunId === childRunId);
    if (run) await this.serial(run, () => this.advance(run));
  }

  /** Rebuilds open strategy runs whose lease it gets from their events (`open`: as `RunCoordinator.recover`). */
  async recover(open?: readonly OpenRun[]): Promise<string[]> {
    const recovered: string[] = [];
    for (const { runId, first } of open ?? (await this.ports.log.openRuns())) {
      if (this.runs.has(runId) || this.starting.has(runId) || !isStrategyParent(first)) continue;
      const events = await leaseAndRead(this.ports, runId);
      if (!events) continue;
      if (events.length === 0 || TERMINAL.has(events[events.length - 1].type)) {
        await this.ports.lease.release(runId); // ended between the listing and the lease
        continue;
      }
      const run = this.fold(runId, events);
      if (!run) {
        // Requested but never accepted: the inputs are gone with the old process.
        await this.ports.log.append(
          runId,
          [
            {
              type: 'DeploymentRefused',
              data: {
                code: 'PLANNING_INTERRUPTED',
                reason: 'the orchestrator restarted while resolving the strategy; start the deployment again',
              },
            },
          ],
          events.length,
        );
        await this.ports.lease.release(runId);
        continue;
      }
      this.runs.set(runId, run);
      recovered.push(runId);
      await this.serial(run, () => this.advance(run));
    }
    return recovered;
  }

  private fold(runId: string, events: RunEvent[]): StrategyRun | undefined {
    const requested = events[0];
    const accepted = events.find((e) => e.type === 'StrategyAccepted');
    if (requested.type !== 'DeploymentRequested' || accepted?.type !== 'StrategyAccepted') return undefined;
    const plan = accepted.data.plan as unknown as StrategyPlan;
    let state = createStrategyRun(plan);
    let pending: StrategyRun['pending'];
    let stopping = false;
    for (const e of events) {
      if (e.type === 'StrategyPhaseStarted')
        pending = {
          action: { kind: e.data.phase, group: e.data.group, nodes: e.data.nodes },
          childRunId: e.data.childRunId,
        };
      if (e.type === 'StrategyPhaseFinished') {
        state = applyResult(state, {
          group: e.data.group,
          phase: e.data.phase,
          succeeded: e.data.succeeded,
          failed: e.data.failed,
        });
        pending = undefined;
      }
      if (e.type === 'DeploymentStopRequested') stopping = true;
      if (e.type === 'DeploymentResumed') stopping = false;
    }
    const r = requested.data;
    const request: StartDeployment = {
      commandId: 'recovery',
      runId,
      ...(r.envId ? { envId: r.envId } : {}),
      ...(accepted.data.inline ? { inline: accepted.data.inline } : {}),
      graph: r.graph,
      ...(r.filters ? { filters: r.filters } : {}),
      ...(r.strategy ? { strategy: r.strategy } : {}),
      dryRun: r.dryRun,
      noop: r.noop,
    };
    return { runId, version: events.length, request, plan, state, pending, stopping, queue: Promise.resolve() };
  }

  /** Finishes the pending phase if its run ended, then starts the next phase or ends the run. */
  private async advance(run: StrategyRun): Promise<void> {
    if (run.pending) {
      const phase = await this.ports.log.read(run.pending.childRunId);
      if (phase.length === 0) {
        // Recorded as started, but the orchestrator stopped before the phase run was created.
        if (run.stopping) return this.endStopped(run);
        await this.startPhase(run, run.pending.action, run.pending.childRunId);
        return;
      }
      const end = phaseEnd(phase);
      // The operator stopped the phase run itself: the strategy run stops with it.
      if (end === 'stopped' && !run.stopping)
        await this.requestStop(run, `phase run ${run.pending.childRunId} was stopped`);
      if (run.stopping && end !== 'succeeded_or_failed') {
        // Stopped, or still running: the phase stays pending for a resume.
        if (end === 'running')
          await this.phases.stop(run.pending.childRunId).catch((err: Error) =>
            this.ports.logger.warn('cannot stop the phase run yet; trying again on the next tick', {
              runId: run.runId,
              childRunId: run.pending?.childRunId,
              err: err.message,
            }),
          );
        else await this.endStopped(run);
        return;
      }
      const result = phaseOutcome(run.pending, phase);
      if (!result) return; // still running
      await this.append(run, [
        {
          type: 'StrategyPhaseFinished',
          data: {
            group: run.pending.action.group,
            phase: run.pending.action.kind,
            childRunId: run.pending.childRunId,
            ...result,
          },
        },
      ]);
      run.state = applyResult(run.state, {
        group: run.pending.action.group,
        phase: run.pending.action.kind,
        succeeded: result.succeeded,
        failed: result.failed,
      });
      run.pending = undefined;
    }
    if (run.stopping) return this.endStopped(run);
    const next = nextAction(run.state);
    if (next.kind === 'done') {
      const report = buildReport(run.state);
      const at = this.ports.clock.now().toISOString();
      const failedNodes = [...report.nodes.failed];
      const critical = report.groups.filter((g) => g.critical && g.status === 'FAILED').map((g) => g.name);
      await this.append(run, [
        {
          type: 'StrategyReported',
          data: { outcome: next.outcome, report: report as unknown as Record<string, unknown> },
        },
        next.outcome === 'failed'
          ? {
              type: 'DeploymentFailed',
              data: { at, reason: `critical group(s) failed: ${critical.join(', ')}`, failedNodes },
            }
          : { type: 'DeploymentSucceeded', data: { at, failedNodes, outcome: next.outcome } },
      ]);
      this.runs.delete(run.runId);
      await this.ports.lease.release(run.runId);
      return;
    }
    const childRunId = `${run.runId}-${run.state.steps.length + 1}-${next.kind}`;
    await this.append(run, [
      {
        type: 'StrategyPhaseStarted',
        data: { group: next.group, phase: next.kind, nodes: next.nodes, childRunId, graph: PHASE_GRAPHS[next.kind] },
      },
    ]);
    run.pending = { action: next, childRunId };
    await this.startPhase(run, next, childRunId);
  }

  private async requestStop(run: StrategyRun, detail: string): Promise<void> {
    await this.append(run, [{ type: 'DeploymentStopRequested', data: { reason: 'operator', detail } }]);
    run.stopping = true;
  }

  private async endStopped(run: StrategyRun): Promise<void> {
    const failedNodes = [...buildReport(run.state).nodes.failed];
    await this.append(run, [
      { type: 'DeploymentStopped', data: { at: this.ports.clock.now().toISOString(), failedNodes } },
    ]);
    this.runs.delete(run.runId);
    await this.ports.lease.release(run.runId);
  }

  /** Throws what the operator needs to know about a strategy run this orchestrator does not drive (retry does not take strategy runs). */
  private async whyNotDriven(runId: string, action: 'stop' | 'resume'): Promise<never> {
    const { code, message } = notDrivenReason(runId, await this.ports.log.read(runId), action, false);
    throw new StrategyRunError(code, message);
  }

  /**
   * Starts a phase as a run of its own: the phase's graph on the action's nodes, node failures
   * tolerated. Returns once the phase run is recorded; it is planned in its own queue (a planner
   * that is away or a big plan holds up neither this strategy's queue nor the ticks), and its
   * end is noticed like any other (`childEnded`, `tick`).
   */
  private async startPhase(run: StrategyRun, action: StrategyAction, childRunId: string): Promise<void> {
    await this.children.accept(
      {
        ...run.request,
        commandId: `${childRunId}-start`,
        runId: childRunId,
        graph: PHASE_GRAPHS[action.kind],
        filters: { ...(run.request.filters ?? {}), nodes: action.nodes },
        strategy: undefined,
      },
      { childOf: { runId: run.runId, group: action.group, phase: action.kind }, tolerateNodeFailures: true },
    );
  }

  /**
   * Appends at the run's version. When that fails (a conflict, the database), the run is folded
   * again from the log where it can be read, so the next step starts from what is recorded
   * instead of failing the same way on every tick.
   */
  private async append(run: StrategyRun, events: RunEvent[]): Promise<void> {
    try {
      run.version = await this.ports.log.append(run.runId, events, run.version, { correlationId: run.runId });
    } catch (err) {
      const recorded = await this.ports.log.read(run.runId).catch(() => undefined);
      const fresh = recorded ? this.fold(run.runId, recorded) : undefined;
      if (fresh)
        Object.assign(run, {
          version: fresh.version,
          state: fresh.state,
          pending: fresh.pending,
          stopping: fresh.stopping,
        });
      throw err;
    }
  }

  private serial<T>(run: StrategyRun, work: () => Promise<T>): Promise<T> {
    const next = run.queue.then(work, work);
    run.queue = next.catch(() => undefined);
    return next;
  }
}

/** How a phase run stands, from its events: running (not ended yet), stopped, or ended otherwise. */
function phaseEnd(events: readonly RunEvent[]): 'running' | 'stopped' | 'succeeded_or_failed' {
  const last = events[events.length - 1]?.type;
  if (!last || !TERMINAL.has(last)) return 'running';
  return last === 'DeploymentStopped' ? 'stopped' : 'succeeded_or_failed';
}

/** The outcome of a phase run, from its events, or undefined while it runs. */
function phaseOutcome(
  pending: NonNullable<StrategyRun['pending']>,
  events: readonly RunEvent[],
): { succeeded: string[]; failed: string[]; note?: string } | undefined {
  const last = events[events.length - 1];
  const nodes = pending.action.nodes;
  if (!last || !TERMINAL.has(last.type)) return undefined;
  if (last.type === 'DeploymentRefused') {
    // A release without the phase's graph has nothing to do in that phase.
    if (last.data.code === 'PLAN_UNKNOWN_GRAPH' && pending.action.kind === 'prepare')
      return { succeeded: nodes, failed: [], note: last.data.reason };
    return { succeeded: [], failed: nodes, note: last.data.reason };
  }
  const failed = new Set(events.flatMap((e) => (e.type === 'NodeFailed' ? [e.data.node] : [])));
  if (last.type !== 'DeploymentSucceeded') for (const n of nodes) failed.add(n);
  return { succeeded: nodes.filter((n) => !failed.has(n)), failed: nodes.filter((n) => failed.has(n)) };
}
