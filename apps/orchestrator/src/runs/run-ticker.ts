import { Inject, Injectable } from '@nestjs/common';
import type { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { RunCoordinator, StrategyCoordinator } from '@granule/run-coordination';
import { describeFailure } from '@granule/messaging';
import { RepeatedFailureLog } from '@granule/observability';
import type { Logger } from '@granule/service-kit';
import { OrchestratorConfig } from '../orchestrator.config';
import { LOGGER } from '../orchestrator.tokens';
import { OutboxKeeper } from '../outbox/outbox-keeper';
import { ResultIntake } from '../results/result-intake';
import { PostgresRunEventLog } from './adapters/run-event-log.adapter';

/**
 * The orchestrator's clock: at start, and then every tick, it takes up the open runs nobody
 * drives (strategy runs first: a phase run is driven where its strategy run is), lets the
 * coordinators check their runs (timeouts, offline nodes, dispatch, leases), keeps a results
 * feed for each run driven here, and keeps the outbox. A failing tick (the database or Redis is
 * down) is logged once per outage.
 */
@Injectable()
export class RunTicker implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer?: NodeJS.Timeout;
  private leaseTimer?: NodeJS.Timeout;
  private ticking = false;
  private renewing = false;
  private stopped = false;
  private readonly failures: RepeatedFailureLog;

  constructor(
    @Inject(OrchestratorConfig) private readonly config: OrchestratorConfig,
    @Inject(RunCoordinator) private readonly runs: RunCoordinator,
    @Inject(StrategyCoordinator) private readonly strategies: StrategyCoordinator,
    @Inject(PostgresRunEventLog) private readonly log: PostgresRunEventLog,
    @Inject(ResultIntake) private readonly results: ResultIntake,
    @Inject(OutboxKeeper) private readonly outbox: OutboxKeeper,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.failures = new RepeatedFailureLog(logger, {
      failing: 'tick failed; trying again every tick',
      recovered: 'ticks work again',
      level: 'error',
      describe: describeFailure,
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    const recovered = await this.recover();
    if (recovered.length > 0) this.logger.info({ runs: recovered }, 'continuing runs from the event log');
    this.results.sync();
    this.timer = setInterval(() => void this.tick(), this.config.tickMs);
    // Leases are renewed on a clock of their own: a tick can wait long behind a run's work.
    this.leaseTimer = setInterval(() => void this.renewLeases(), Math.max(250, Math.floor(this.config.leaseMs / 5)));
  }

  private async renewLeases(): Promise<void> {
    if (this.renewing || this.stopped) return;
    this.renewing = true;
    try {
      await this.runs.renewLeases();
      await this.strategies.renewLeases();
    } catch (err) {
      this.failures.failed(err);
    } finally {
      this.renewing = false;
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    // Leases go at once, so another orchestrator need not wait for them to lapse.
    await this.runs.releaseAll();
    await this.strategies.releaseAll();
  }

  private async tick(): Promise<void> {
    if (this.ticking || this.stopped) return;
    this.ticking = true;
    try {
      await this.runs.tick();
      await this.strategies.tick();
      await this.recover();
      await this.releaseOrphanedPhaseRuns();
      this.results.sync();
      await this.outbox.tick();
      this.failures.succeeded();
    } catch (err) {
      this.failures.failed(err);
    } finally {
      this.ticking = false;
    }
  }

  /** Takes over the open runs nobody drives; one listing of them serves both coordinators. */
  private async recover(): Promise<string[]> {
    const open = await this.log.openRuns();
    const strategies = await this.strategies.recover(open);
    return [...strategies, ...(await this.runs.recover(open, (parent) => this.strategies.drives(parent)))];
  }

  /** A phase run whose strategy run is driven elsewhere is let go, so that orchestrator takes it up. */
  private async releaseOrphanedPhaseRuns(): Promise<void> {
    for (const runId of this.runs.owned()) {
      const parent = this.runs.stateOf(runId)?.request?.childOf?.runId;
      if (
        parent !== undefined &&
        !this.strategies.drives(parent) &&
        (await this.log.lastEventType(parent)) !== undefined
      )
        await this.runs.release(runId);
    }
  }
}
