import { Inject, Injectable } from '@nestjs/common';
import type { OnApplicationShutdown } from '@nestjs/common';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { executionSubjects } from '@granule/contracts';
import type { ExecutionSubjects, TaskProgressMessage } from '@granule/contracts';
import { decodeJson } from '@granule/messaging';
import { RepeatedFailureLog } from '@granule/observability';
import { RunCoordinator } from '@granule/run-coordination';
import type { Logger } from '@granule/service-kit';
import { OrchestratorConfig } from '../orchestrator.config';
import { LOGGER, NATS } from '../orchestrator.tokens';

/** Results taken in one batch at most: one append per run for all of them. */
const BATCH = 500;

/**
 * Feeds agents' task results to the runs this orchestrator drives: a JetStream consumer per run,
 * filtered on `<prefix>.result.<run>.>` and starting from the run's first result (a recovered run
 * sees what came while no orchestrator was there; replays change nothing). A result is taken
 * only from the subject of the node it names: NATS lets an agent publish only its own node's.
 * Results that arrive while a batch is being recorded form the next batch (one commit each); a
 * batch that cannot be recorded is handed back and delivered again.
 */
@Injectable()
export class ResultIntake implements OnApplicationShutdown {
  private readonly subjects: ExecutionSubjects;
  private readonly feeds = new Map<string, ConsumerMessages | 'opening'>();

  constructor(
    @Inject(NATS) private readonly nats: NatsConnection,
    @Inject(OrchestratorConfig) config: OrchestratorConfig,
    @Inject(RunCoordinator) private readonly runs: RunCoordinator,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.subjects = executionSubjects(config.subjectPrefix);
  }

  /** Opens a feed for each run driven here and closes those of runs no longer driven here. */
  sync(): void {
    const owned = new Set(this.runs.owned());
    for (const [runId, feed] of this.feeds) {
      if (owned.has(runId)) continue;
      if (feed !== 'opening') void feed.close();
      this.feeds.delete(runId);
    }
    for (const runId of owned) {
      if (this.feeds.has(runId)) continue;
      this.feeds.set(runId, 'opening');
      void this.feed(runId);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    for (const feed of this.feeds.values()) if (feed !== 'opening') await feed.close();
    this.feeds.clear();
  }

  private async feed(runId: string): Promise<void> {
    let feed: ConsumerMessages | undefined;
    try {
      // An ephemeral consumer with a single filter subject (ordered consumers need
      // filter_subjects, which NATS servers before 2.10 refuse).
      const jsm = await jetstreamManager(this.nats);
      const info = await jsm.consumers.add(this.subjects.results.stream, {
        filter_subject: this.subjects.results.forRun(runId),
        deliver_policy: DeliverPolicy.All,
        ack_policy: AckPolicy.Explicit,
        inactive_threshold: nanos(60_000),
      });
      const consumer = await jetstream(this.nats).consumers.get(this.subjects.results.stream, info.name);
      feed = await consumer.consume();
      if (this.feeds.get(runId) !== 'opening') {
        await feed.close();
        return;
      }
      this.feeds.set(runId, feed);
      await this.record(runId, feed);
    } catch (err) {
      this.logger.warn({ runId, err: (err as Error).message }, 'results feed ended; it restarts on the next tick');
    }
    // Ended on its own (a failure, NATS gone): the next sync opens it again.
    const current = this.feeds.get(runId);
    if (current === 'opening' || current === feed) this.feeds.delete(runId);
  }

  private async record(runId: string, feed: ConsumerMessages): Promise<void> {
    const pending: JsMsg[] = [];
    const failures = new RepeatedFailureLog(this.logger, {
      failing: 'could not record task results; they will be delivered again',
      recovered: 'task results are recorded again',
      level: 'error',
    });
    let draining: Promise<void> | undefined;
    const drain = async (): Promise<void> => {
      while (pending.length > 0) {
        const batch = pending.splice(0, BATCH);
        const reports: TaskProgressMessage[] = [];
        const readable: JsMsg[] = [];
        for (const msg of batch) {
          const report = this.readResult(runId, msg);
          if (!report) continue;
          reports.push(report);
          readable.push(msg);
        }
        try {
          await this.runs.progressBatch(reports);
          for (const msg of readable) msg.ack();
          failures.succeeded({ runId });
        } catch (err) {
          // Not recorded: the results come again (the coordinator's state matches the log).
          failures.failed(err, { runId });
          for (const msg of readable) msg.nak(1000);
        }
      }
      draining = undefined;
    };
    for await (const msg of feed) {
      pending.push(msg);
      draining ??= drain();
    }
    await draining;
  }

  /** The report of a result message, or undefined (dropped for good) when it is not JSON or names another node than its subject. */
  private readResult(runId: string, msg: JsMsg): TaskProgressMessage | undefined {
    let report: TaskProgressMessage;
    try {
      report = decodeJson<TaskProgressMessage>(msg);
    } catch (err) {
      this.logger.error({ runId, err: (err as Error).message }, 'dropping a result that is not valid JSON');
      msg.term();
      return undefined;
    }
    const from = this.subjects.results.nodeOf(msg.subject);
    if (report.node !== from) {
      this.logger.warn(
        { runId, node: from, claimedNode: report.node, key: report.key },
        'dropping a result whose node is not the one its subject names',
      );
      msg.term();
      return undefined;
    }
    return report;
  }
}
