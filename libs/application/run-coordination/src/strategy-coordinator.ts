import { GranuleError } from '@granule/core';
import type { StartDeployment, StoredInputsRef, StrategyRef } from '@granule/contracts';
import { planStrategy } from '@granule/deployment-strategy';
import type { DeploymentStrategy, StrategyPlan } from '@granule/deployment-strategy';
import { isTerminalRunEvent, RunError } from '@granule/run-events';
import type { RunEvent } from '@granule/run-events';
import { isStrategyParent, PHASE_GRAPHS, phaseRunOutcome, strategyRunDecider } from '@granule/strategy-run';
import type { PhaseRunOutcome, StrategyRun, StrategyRunCommand } from '@granule/strategy-run';
import type { NodeSpec } from '@granule/task-model';
import { DeciderDriver } from './decider-driver';
import type { DrivenStream, StreamProcess } from './decider-driver';
import type { CoordinatorPorts, OpenRun, SideEvent } from './ports';
import { requestData } from './request-data';
import type { RunCoordinator } from './run-coordinator';
import { notDrivenReason } from './run-recovery';

/** Finds the strategy document and the nodes its selectors look at. */
export interface StrategySource {
  resolve(
    ref: StrategyRef,
    request: { envId?: string; inlineNodes?: unknown[]; inputs?: StoredInputsRef },
  ): Promise<{ strategy: DeploymentStrategy; nodes: NodeSpec[] }>;
}

type StrategyStream = DrivenStream<StrategyRun, undefined, Record<string, never>>;

/** A deployment command that names a strategy: what `StrategyCoordinator.start` takes. */
export type StrategyStart = StartDeployment & { strategy: StrategyRef };

/**
 * Drives strategy runs (seed 004) with the generic decider driver and the strategy-run decider
 * (`@granule/strategy-run`): groups one at a time, each phase a run of its own (the phase run) on
 * the group's nodes, with node failures tolerated there. A phase run is driven by the
 * orchestrator that drives its strategy run (`RunCoordinator.recover` leaves it to it), so
 * stopping, resuming and noticing its end are calls, never messages this process sends itself.
 *
 * A stop (of the strategy run, or of its phase run by the operator) stops the phase run
 * gracefully and ends the strategy run stopped with that phase still pending; a resume resumes
 * the phase run and goes on from there.
 */
export class StrategyCoordinator {
  private readonly driver: DeciderDriver<
    StrategyRun,
    StrategyRunCommand,
    RunEvent,
    undefined,
    Record<string, never>,
    SideEvent
  >;

  constructor(
    private readonly ports: CoordinatorPorts,
    private readonly strategies: StrategySource,
    private readonly children: RunCoordinator,
  ) {
    const process: StreamProcess<
      StrategyRun,
      StrategyRunCommand,
      RunEvent,
      undefined,
      Record<string, never>,
      SideEvent
    > = {
      decider: strategyRunDecider,
      loadContext: async () => undefined,
      newLocal: () => ({}),
      react: (run, events) => this.react(run, events),
    };
    this.driver = new DeciderDriver(process, ports);
  }

  owned(): string[] {
    return this.driver.ids();
  }

  drives(runId: string): boolean {
    return this.driver.has(runId);
  }

  /** Lets go of every strategy run (shutdown): another orchestrator takes them up at once. */
  releaseAll(): Promise<void> {
    return this.driver.releaseAll();
  }

  /** Whether `runId` is a strategy run (its first event asks for a strategy). */
  async isStrategyRun(runId: string): Promise<boolean> {
    return this.driver.has(runId) || isStrategyParent(await this.ports.log.first(runId));
  }

  /**
   * Records the request, resolves the strategy against the nodes and starts the first phase.
   * A strategy that cannot be resolved ends the run refused.
   */
  async start(
    command: StrategyStart,
    extra: { requestedBy?: string } = {},
    metadata?: Record<string, unknown>,
  ): Promise<void> {
    const run = await this.driver.create(
      command.runId,
      [{ type: 'RequestStrategyRun', request: { ...requestData(command), ...extra } }],
      undefined,
      metadata,
    );
    await this.driver.run(run, async () => {
      let plan: StrategyPlan;
      try {
        const resolved = await this.strategies.resolve(command.strategy, {
          envId: command.envId,
          inlineNodes: command.inline?.nodes,
          inputs: command.inputs,
        });
        plan = planStrategy(resolved.strategy, resolved.nodes);
      } catch (err) {
        const code = err instanceof GranuleError ? err.code : 'STRATEGY_UNRESOLVED';
        await this.driver.execute(run, [{ type: 'RefuseStrategy', code, reason: (err as Error).message }]);
        return;
      }
      await this.driver.execute(run, [
        {
          type: 'AcceptStrategy',
          plan,
          ...(command.inline ? { inline: command.inline } : {}),
          ...(command.inputs ? { inputs: command.inputs } : {}),
        },
        { type: 'Advance', at: this.now() },
      ]);
    });
  }

  /** Stops a strategy run this orchestrator drives: its phase run stops gracefully, then the run ends stopped. */
  async stop(runId: string, metadata?: Record<string, unknown>, requestedBy?: string): Promise<void> {
    const run = this.driver.get(runId) ?? (await this.whyNotDriven(runId, 'stop'));
    await this.driver.run(run, () =>
      this.driver.execute(
        run,
        [{ type: 'Stop', at: this.now(), detail: 'stopped by the operator', ...(requestedBy ? { requestedBy } : {}) }],
        metadata,
      ),
    );
  }

  /** Resumes a stopped (or stopping) strategy run: its pending phase run is resumed and the strategy goes on. */
  async resume(runId: string, metadata?: Record<string, unknown>, requestedBy?: string): Promise<void> {
    const run =
      this.driver.get(runId) ??
      (await this.driver.adopt(runId, (events) => events[events.length - 1]?.type === 'DeploymentStopped')) ??
      (await this.whyNotDriven(runId, 'resume'));
    try {
      const phaseStoppedAt = await this.phaseStoppedAt(run);
      await this.driver.run(run, () =>
        this.driver.execute(
          run,
          [
            {
              type: 'Resume',
              at: this.now(),
              ...(phaseStoppedAt ? { phaseStoppedAt } : {}),
              ...(requestedBy ? { requestedBy } : {}),
            },
          ],
          metadata,
        ),
      );
    } finally {
      // A refused resume leaves the run stopped: nobody drives a stopped run.
      if (run.state.phase === 'stopped') await this.driver.release(runId);
    }
  }

  /**
   * When the pending phase run stopped, if it did: it stopped before its strategy run, and the
   * resume window is the earlier one's, so the strategy never resumes a phase run that refuses.
   */
  private async phaseStoppedAt(run: StrategyStream): Promise<string | undefined> {
    const child = run.state.pending?.childRunId;
    if (!child || (await this.ports.log.lastEventType(child)) !== 'DeploymentStopped') return undefined;
    const last = (await this.ports.log.read(child)).at(-1);
    return last?.type === 'DeploymentStopped' ? last.data.at : undefined;
  }

  /** A phase run this orchestrator drove has ended (its driver says so at once). */
  async childEnded(childRunId: string, outcome: PhaseRunOutcome): Promise<void> {
    const run = this.driver
      .ids()
      .map((id) => this.driver.get(id) as StrategyStream)
      .find((r) => r.state.pending?.childRunId === childRunId);
    if (run) await this.driver.run(run, () => this.recordPhaseEnd(run, childRunId, outcome));
  }

  /** Renews the leases of the strategy runs driven here now, without waiting for their work (see `RunCoordinator.renewLeases`). */
  async renewLeases(): Promise<void> {
    await this.driver.renewLeases();
  }

  /** Periodic: renews leases and looks after each run's phase run (see `checkPhase`). */
  async tick(): Promise<void> {
    for (const run of await this.driver.renewLeases()) await this.driver.run(run, () => this.checkPhase(run));
  }

  /** Takes up the open strategy runs nobody drives, and their phase runs. */
  async recover(open?: readonly OpenRun[]): Promise<string[]> {
    const recovered: string[] = [];
    for (const { runId, first } of open ?? (await this.ports.log.openRuns())) {
      if (this.driver.has(runId) || !isStrategyParent(first)) continue;
      const run = await this.driver.adopt(
        runId,
        (events) => events.length > 0 && !isTerminalRunEvent(events[events.length - 1].type),
      );
      if (!run) continue;
      recovered.push(runId);
      await this.driver.run(run, async () => {
        if (run.state.phase === 'requested') {
          // Requested but never accepted: the inputs are gone with the old process.
          await this.driver.execute(run, [
            {
              type: 'RefuseStrategy',
              code: 'PLANNING_INTERRUPTED',
              reason: 'the orchestrator restarted while resolving the strategy; start the deployment again',
            },
          ]);
          return;
        }
        await this.checkPhase(run);
      });
    }
    return recovered;
  }

  private async react(run: StrategyStream, events: readonly RunEvent[]): Promise<void> {
    const pending = run.state.pending;
    for (const e of events) {
      if (e.type === 'StrategyPhaseStarted' && pending?.childRunId === e.data.childRunId) await this.startPhase(run);
      if (e.type === 'DeploymentStopRequested' && pending) await this.stopPhase(run);
      if (e.type === 'DeploymentResumed' && pending) await this.resumePhase(run);
    }
  }

  /**
   * Makes the run's phase run match the run: starts one that was recorded but never created,
   * takes up one nobody drives (it is driven where its strategy run is), stops one while the run
   * stops, and records the end of one that ended while nobody watched. With no phase pending,
   * asks the decider for the next step.
   */
  private async checkPhase(run: StrategyStream): Promise<void> {
    const pending = run.state.pending;
    if (!pending) {
      await this.driver.execute(run, [{ type: 'Advance', at: this.now() }]);
      return;
    }
    const child = pending.childRunId;
    if (this.children.drives(child)) {
      if (run.state.phase === 'stopping') await this.stopPhase(run);
      return;
    }
    const last = await this.ports.log.lastEventType(child);
    if (last === undefined) {
      // Recorded as started, but the orchestrator stopped before the phase run was created.
      if (run.state.phase === 'stopping') await this.recordPhaseEnd(run, child, { end: 'absent', failedNodes: [] });
      else await this.startPhase(run);
      return;
    }
    if (!isTerminalRunEvent(last)) {
      // Open and driven by nobody here: take it up (its lease may still be another's until it lapses).
      if (await this.children.adopt(child, false).catch(() => undefined))
        if (run.state.phase === 'stopping') await this.stopPhase(run);
      return;
    }
    if (last === 'DeploymentStopped' && run.state.phase === 'running') {
      // Stopped while the strategy ran on: the operator stopped the phase run itself.
      await this.recordPhaseEnd(run, child, { end: 'stopped', failedNodes: [] });
      return;
    }
    const outcome = phaseRunOutcome(await this.ports.log.read(child));
    if (outcome) await this.recordPhaseEnd(run, child, outcome);
  }

  private async recordPhaseEnd(run: StrategyStream, childRunId: string, outcome: PhaseRunOutcome): Promise<void> {
    await this.driver.execute(run, [{ type: 'RecordPhaseEnd', childRunId, outcome, at: this.now() }]);
  }

  /**
   * Starts the pending phase as a run of its own: the phase's graph on the action's nodes, node
   * failures tolerated. Returns once the phase run is recorded; it is planned in its own queue,
   * and its end is noticed like any other (`childEnded`, `tick`).
   */
  private async startPhase(run: StrategyStream): Promise<void> {
    const { state } = run;
    const pending = state.pending;
    const request = state.request;
    if (!pending || !request) return;
    const { action, childRunId } = pending;
    const command: StartDeployment = {
      commandId: `${childRunId}-start`,
      runId: childRunId,
      ...(request.envId ? { envId: request.envId } : {}),
      ...(state.inline ? { inline: state.inline } : {}),
      ...(state.inputs ? { inputs: state.inputs } : {}),
      graph: PHASE_GRAPHS[action.kind],
      filters: { ...(request.filters ?? {}), nodes: action.nodes },
      dryRun: request.dryRun,
      noop: request.noop,
      ...(request.check ? { check: true, ...(request.diff ? { diff: true } : {}) } : {}),
    };
    await this.children.accept(command, {
      childOf: { runId: run.id, group: action.group, phase: action.kind },
      tolerateNodeFailures: true,
      ...(request.requestedBy ? { requestedBy: request.requestedBy } : {}),
      // Each phase run locks its own nodes (ADR 0024); it waits for them when the strategy run was asked to.
      ...(request.waitForLocks ? { waitForLocks: true } : {}),
    });
  }

  private async stopPhase(run: StrategyStream): Promise<void> {
    const child = run.state.pending?.childRunId;
    if (!child || !this.children.drives(child)) return;
    await this.children.stop(child).catch((err: Error) =>
      this.ports.logger.warn('cannot stop the phase run yet; trying again on the next tick', {
        runId: run.id,
        childRunId: child,
        err: err.message,
      }),
    );
  }

  private async resumePhase(run: StrategyStream): Promise<void> {
    const child = run.state.pending?.childRunId;
    if (!child) return;
    const last = await this.ports.log.lastEventType(child);
    if (last === undefined) return this.startPhase(run);
    // The strategy run has recorded its resume: a phase run whose nodes were taken meanwhile waits for them.
    if (last === 'DeploymentStopped' || !isTerminalRunEvent(last)) return this.children.resume(child, undefined, true);
    // It ended on its own while the strategy was stopped: judge it now.
    const outcome = phaseRunOutcome(await this.ports.log.read(child));
    if (outcome) await this.recordPhaseEnd(run, child, outcome);
  }

  /** Throws what the operator needs to know about a strategy run this orchestrator does not drive (retry does not take strategy runs). */
  private async whyNotDriven(runId: string, action: 'stop' | 'resume'): Promise<never> {
    const { code, message } = notDrivenReason(runId, await this.ports.log.read(runId), action, false);
    throw new RunError(code, message);
  }

  private now(): string {
    return this.ports.clock.now().toISOString();
  }
}
