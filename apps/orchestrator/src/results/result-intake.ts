import { Inject, Injectable } from '@nestjs/common';
import type { OnModuleDestroy } from '@nestjs/common';
import { AckPolicy, DeliverPolicy } from '@nats-io/jetstream';
import type { JsMsg } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { executionSubjects } from '@granule/contracts';
import type { ExecutionSubjects, TaskProgressMessage } from '@granule/contracts';
import { decodeJson, JetStreamConsumers } from '@granule/messaging';
import type { ConsumerRun, Settle } from '@granule/messaging';
import { RepeatedFailureLog } from '@granule/observability';
import { RunCoordinator } from '@granule/run-coordination';
import type { Logger } from '@granule/service-kit';
import { OrchestratorConfig } from '../orchestrator.config';
import { LOGGER } from '../orchestrator.tokens';

/** Results taken in one batch at most: one append per run for all of them. */
const BATCH = 500;

/**
 * Feeds agents' task results to the runs this orchestrator drives: a JetStream consumer per run
 * (through `JetStreamConsumers`), filtered on `<prefix>.result.<run>.>` and starting from the
 * run's first result (a recovered run sees what came while no orchestrator was there; replays
 * change nothing). A result is taken only from the subject of the node it names: NATS lets an
 * agent publish only its own node's. Results that arrive while a batch is being recorded form
 * the next batch (one commit each); a batch that cannot be recorded is handed back and
 * delivered again.
 */
@Injectable()
export class ResultIntake implements OnModuleDestroy {
  private readonly subjects: ExecutionSubjects;
  private readonly feeds = new Map<string, ConsumerRun | 'opening'>();
  private closed = false;

  constructor(
    @Inject(OrchestratorConfig) config: OrchestratorConfig,
    @Inject(RunCoordinator) private readonly runs: RunCoordinator,
    @Inject(JetStreamConsumers) private readonly consumers: JetStreamConsumers,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.subjects = executionSubjects(config.subjectPrefix);
  }

  /** Opens a feed for each run driven here and closes those of runs no longer driven here. */
  sync(): void {
    if (this.closed) return;
    const owned = new Set(this.runs.owned());
    for (const [runId, feed] of this.feeds) {
      if (owned.has(runId)) continue;
      if (feed !== 'opening') void feed.stop();
      this.feeds.delete(runId);
    }
    for (const runId of owned) {
      if (this.feeds.has(runId)) continue;
      this.feeds.set(runId, 'opening');
      void this.open(runId);
    }
  }

  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    const feeds = [...this.feeds.values()];
    this.feeds.clear();
    await Promise.all(feeds.map((feed) => (feed === 'opening' ? undefined : feed.stop())));
  }

  private async open(runId: string): Promise<void> {
    const failures = new RepeatedFailureLog(this.logger, {
      failing: 'could not record task results; they will be delivered again',
      recovered: 'task results are recorded again',
      level: 'error',
    });
    try {
      const feed = await this.consumers.start({
        what: 'results feed',
        fields: { runId },
        stream: this.subjects.results.stream,
        // An ephemeral consumer with a single filter subject (ordered consumers need
        // filter_subjects, which NATS servers before 2.10 refuse).
        config: {
          filter_subject: this.subjects.results.forRun(runId),
          deliver_policy: DeliverPolicy.All,
          ack_policy: AckPolicy.Explicit,
          inactive_threshold: nanos(60_000),
        },
        batch: BATCH,
        handleBatch: (msgs) => this.record(runId, msgs, failures),
      });
      if (this.feeds.get(runId) !== 'opening') {
        await feed.stop();
        return;
      }
      this.feeds.set(runId, feed);
    } catch (err) {
      this.logger.warn(
        { runId, err: (err as Error).message },
        'results feed did not open; it is tried again on the next tick',
      );
      if (this.feeds.get(runId) === 'opening') this.feeds.delete(runId);
    }
  }

  /** Records one batch of a run's results: acknowledged once recorded, handed back when not. */
  private async record(runId: string, msgs: readonly JsMsg[], failures: RepeatedFailureLog): Promise<Settle[]> {
    const settles: Settle[] = [];
    const reports: TaskProgressMessage[] = [];
    const readable: number[] = [];
    msgs.forEach((msg, i) => {
      const report = this.readResult(runId, msg);
      if (!report) {
        settles[i] = 'term';
        return;
      }
      reports.push(report);
      readable.push(i);
    });
    try {
      await this.runs.progressBatch(reports);
      for (const i of readable) settles[i] = 'ack';
      failures.succeeded({ runId });
    } catch (err) {
      // Not recorded: the results come again (the coordinator's state matches the log).
      failures.failed(err, { runId });
      for (const i of readable) settles[i] = { nak: 1000 };
    }
    return settles;
  }

  /** The report of a result message, or undefined (dropped for good) when it is not JSON or names another node than its subject. */
  private readResult(runId: string, msg: JsMsg): TaskProgressMessage | undefined {
    let report: TaskProgressMessage;
    try {
      report = decodeJson<TaskProgressMessage>(msg);
    } catch (err) {
      this.logger.error({ runId, err: (err as Error).message }, 'dropping a result that is not valid JSON');
      return undefined;
    }
    const from = this.subjects.results.nodeOf(msg.subject);
    if (report.node !== from) {
      this.logger.warn(
        { runId, node: from, claimedNode: report.node, key: report.key },
        'dropping a result whose node is not the one its subject names',
      );
      return undefined;
    }
    return report;
  }
}
