import { Inject, Injectable } from '@nestjs/common';
import { CallerVerifier, decodeJson } from '@granule/messaging';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  isRebootPending,
  stopLeftoverGroup,
  type LeftoverGroupState,
  type FailedTry,
  type OutputChunk,
  type TaskJournal,
  type TaskOutcome,
  type TaskProcessGroup,
  type TaskRunner,
} from '@granule/task-runners';
import {
  DEFAULT_TASK_LOG_LIMIT_BYTES,
  TASK_LOG_LIMIT_BOUNDS,
  type DispatchRefusedAlert,
  type TaskDispatchMessage,
} from '@granule/contracts';
import type { JsMsg } from '@nats-io/jetstream';
import type { AgentMetrics } from '@granule/observability';
import { taskBindings } from '@granule/service-kit/logging';
import { AGENT_LOGGER, type AgentLogger } from './agent-logger';
import { TaskLogShipper } from './task-log.shipper';
import { AgentMessaging } from './agent-messaging.adapter';
import type { AgentStateStore } from './agent-state.store';
import { AGENT_METRICS, AGENT_STATE, NATS_CONNECTION, TASK_JOURNAL, TASK_RUNNER } from './agent.tokens';
import { AGENT_CONFIG } from './config/agent-config.provider';
import { PackageFiles } from './package-files';
import type { AgentConfig } from './config/agent-config';
import {
  AGENT_STOPPED_ERROR,
  attemptFailedMessage,
  checkDispatch,
  decideDispatch,
  executionOf,
  finishedMessage,
  interruptedOutcome,
  invalidDispatchOutcome,
  journalKeyOf,
  leftoverGroupOf,
  markerOf,
  pendingRebootOf,
  progressMsgIds,
  rebootOutcome,
  recoverOnStart,
  startedMessage,
  type TaskMarker,
} from './dispatch-decision';

/** How often a running task extends its dispatch's ack wait (60 s) with `msg.working()`. */
export const WORKING_INTERVAL_MS = 20_000;

/**
 * `started` is reported only for a task still running this long after it began. A shorter task's
 * outcome carries `startedAt` instead, and the orchestrator records both transitions in one
 * commit: one message, one JetStream write and one orchestrator transaction less per quick task
 * (ADR 0008).
 */
export const STARTED_REPORT_DELAY_MS = 1000;

/**
 * Runs this node's dispatches, one at a time: answers a redelivery from the journal, fails a
 * task the previous agent process died running, otherwise marks it running (fsync), runs it
 * (output streamed live; `started` reported if it is still running after
 * `STARTED_REPORT_DELAY_MS`), journals the outcome and reports it while the journal is flushed
 * (fsync), and only then acknowledges the dispatch.
 */
@Injectable()
export class DispatchHandler {
  private current?: { dispatch: TaskDispatchMessage; controller: AbortController };
  private stopping = false;
  private readonly rebootTimers = new Map<string, NodeJS.Timeout>();
  @Inject(AGENT_METRICS) private readonly metrics!: Pick<AgentMetrics, 'taskFinished'>;
  private readonly callers: CallerVerifier;

  constructor(
    private readonly messaging: AgentMessaging,
    @Inject(TASK_JOURNAL) private readonly journal: TaskJournal,
    @Inject(AGENT_STATE) private readonly state: AgentStateStore,
    @Inject(TASK_RUNNER) private readonly runner: TaskRunner,
    @Inject(AGENT_CONFIG) private readonly config: AgentConfig,
    @Inject(AGENT_LOGGER) private readonly log: AgentLogger,
    @Inject(NATS_CONNECTION) nats: NatsConnection,
    private readonly packages: PackageFiles,
  ) {
    this.callers = new CallerVerifier(nats);
  }

  /**
   * Settles what the previous agent process left: the processes an interrupted task left running
   * are stopped and the task is reported failed, a reboot is reported succeeded (the agent is
   * back) or failed (too late). Call before consuming.
   */
  async recover(): Promise<void> {
    const leftover = await this.stopLeftovers(this.state.running);
    for (const step of recoverOnStart(
      this.state.running,
      this.state.pendingReboots,
      (k) => this.journal.get(k),
      new Date(),
      leftover,
    )) {
      const what = step.journaled
        ? 'reporting a journaled outcome the previous agent process may not have sent'
        : step.marker.type === 'reboot'
          ? 'the agent is back after a reboot task'
          : 'reporting a task interrupted by the agent restart';
      this.taskLog(step.marker).info({ status: step.outcome.status, error: step.outcome.error }, what);
      await this.finish(step.marker, step.outcome, !step.journaled);
      if (step.marker.ackSubject) this.messaging.acknowledge(step.marker.ackSubject);
    }
  }

  /** Handles one delivered dispatch; never throws (a failure leaves it unacknowledged). */
  async handle(msg: JsMsg): Promise<void> {
    try {
      await this.handleOrThrow(msg, performance.now());
    } catch (err) {
      this.log.error(
        { seq: msg.seq, err: (err as Error).message },
        'dispatch not completed; it will be delivered again',
      );
    }
  }

  /**
   * Stops: a running task is cancelled (its failure is reported) except a reboot, whose command
   * is left to finish; reboot deadlines stop being watched (the next start settles them).
   */
  stop(): void {
    this.stopping = true;
    for (const timer of this.rebootTimers.values()) clearTimeout(timer);
    this.rebootTimers.clear();
    if (this.current && this.current.dispatch.type !== 'reboot') this.current.controller.abort();
  }

  private async handleOrThrow(msg: JsMsg, deliveredAt: number): Promise<void> {
    let value: unknown;
    try {
      value = decodeJson(msg);
    } catch (err) {
      this.log.error({ seq: msg.seq, err: (err as Error).message }, 'dropping a dispatch that is not JSON');
      // Acknowledged, not redelivered: it can never become valid (ack removes it from the work queue).
      msg.ack();
      return;
    }
    // Defence in depth: NATS lets only the orchestrator publish dispatches; on an authenticated
    // NATS the dispatch must also carry the orchestrator's signature, or it is not run.
    try {
      this.callers.of(msg.subject, msg.data, msg.headers, ['orchestrator'], 'dispatch');
    } catch (err) {
      const claimed = (value ?? {}) as { runId?: unknown; dispatchId?: unknown };
      const alert: DispatchRefusedAlert = {
        node: this.config.nodeUid,
        subject: msg.subject,
        ...(typeof claimed.runId === 'string' ? { runId: claimed.runId } : {}),
        ...(typeof claimed.dispatchId === 'string' ? { dispatchId: claimed.dispatchId } : {}),
        reason: (err as Error).message,
        at: new Date().toISOString(),
      };
      this.log.error(alert, 'refused a dispatch the orchestrator did not issue; it is not run');
      this.messaging.publishAlert(alert);
      // Terminated, not redelivered: it can never become the orchestrator's.
      msg.term();
      return;
    }
    const check = checkDispatch(value, this.config.nodeUid);
    if (!check.ok) {
      this.log.error({ seq: msg.seq, problems: check.problems }, 'invalid dispatch');
      if (check.replyTo) {
        await this.messaging.publishProgress(
          finishedMessage(check.replyTo, invalidDispatchOutcome(check.problems), new Date()),
          progressMsgIds.done(check.replyTo.dispatchId),
        );
      }
      msg.ack();
      return;
    }
    const d = check.dispatch;
    const log = this.taskLog(d);
    const running = this.state.running?.dispatchId === d.dispatchId ? this.state.running : undefined;
    const decision = decideDispatch({
      journaled: this.journal.get(journalKeyOf(d)),
      running,
      pendingReboot: this.state.pendingReboot(d.dispatchId),
    });
    switch (decision.action) {
      case 'replay':
        await this.messaging.publishProgress(
          finishedMessage(d, decision.outcome, new Date(), true),
          progressMsgIds.replay(d.dispatchId, msg.seq),
        );
        msg.ack();
        log.info(
          { status: decision.outcome.status, seq: msg.seq },
          'dispatch delivered again; answered from the journal, not run again',
        );
        return;
      case 'fail_restarted':
        // Normally settled by recover() at start; met here only if that report failed.
        await this.finish(
          running as TaskMarker,
          interruptedOutcome(running as TaskMarker, new Date(), await this.stopLeftovers(running)),
        );
        msg.ack();
        return;
      case 'await_reboot':
        msg.ack();
        log.info('dispatch delivered again while its reboot is pending; the result follows when the host is back');
        return;
      case 'run':
        await this.run(d, msg, log, deliveredAt);
    }
  }

  private async run(d: TaskDispatchMessage, msg: JsMsg, log: AgentLogger, deliveredAt: number): Promise<void> {
    const marker = markerOf(d, new Date(), replySubjectOf(msg));
    await this.state.start(marker);
    // `started` goes out only if the task is still running after the delay; the outcome is
    // published after it, so the stream keeps them in order. A `started` that cannot be sent (the
    // agent is stopping) is only a missing progress step: the outcome carries `startedAt`.
    let started: Promise<void> | undefined;
    const startedTimer = setTimeout(() => {
      started = this.messaging
        .publishProgress(startedMessage(marker), progressMsgIds.started(d.dispatchId), () => this.stopping)
        .then(
          () => undefined,
          (err: Error) => log.warn({ err: err.message }, 'could not report that the task started'),
        );
    }, STARTED_REPORT_DELAY_MS);
    log.info({ type: d.type, noop: d.noop }, 'task started');

    const controller = new AbortController();
    this.current = { dispatch: d, controller };
    const working = setInterval(() => msg.working(), WORKING_INTERVAL_MS);
    const logs = new TaskLogShipper(
      d,
      (message, msgID) => this.messaging.publishLog(message, msgID, () => this.stopping),
      logLimitOf(d),
    );
    const onOutput = (chunk: OutputChunk): void => {
      logs.add(chunk);
      this.messaging.publishOutput({
        runId: d.runId,
        key: d.key,
        node: d.node,
        stream: chunk.stream,
        seq: chunk.seq,
        data: chunk.data,
      });
    };
    // A try that failed and runs again is reported at once (TaskAttemptFailed), in order.
    let tries: Promise<void> = Promise.resolve();
    const onTryFailed = (failed: FailedTry): void => {
      tries = tries.then(() =>
        this.messaging
          .publishProgress(
            attemptFailedMessage(marker, failed, new Date()),
            progressMsgIds.tryFailed(d.dispatchId, failed.try),
            () => this.stopping,
          )
          .then(
            () => undefined,
            (err: Error) => log.warn({ err: err.message, try: failed.try }, 'could not report a failed try'),
          ),
      );
    };
    let outcome: TaskOutcome;
    try {
      // Recorded so that, should this process die, the next one can stop what the task left running.
      const onSpawn = (group: TaskProcessGroup): void => {
        this.state
          .recordProcess(d.dispatchId, group)
          .catch((err: Error) =>
            log.error({ err: err.message, pgid: group.pgid }, 'cannot record the task process group'),
          );
      };
      // A task whose files are in a package runs on the agent's checked copy of it, or not at all.
      const prepared = await this.packages.prepare(executionOf(d));
      if ('outcome' in prepared) outcome = prepared.outcome;
      else
        try {
          outcome = await this.runner.run(prepared.execution, onOutput, controller.signal, { onSpawn, onTryFailed });
        } finally {
          prepared.release();
        }
    } finally {
      clearInterval(working);
      clearTimeout(startedTimer);
      this.current = undefined;
    }
    if (this.stopping && outcome.errorCode === 'RUNNER_CANCELLED') outcome = { ...outcome, error: AGENT_STOPPED_ERROR };

    await started;
    await tries;
    // The output is stored before the outcome is reported: whoever reads the result finds the log.
    await logs.close().catch((err: Error) => log.warn({ err: err.message }, 'could not send all of the task output'));
    if (isRebootPending(outcome)) {
      const pending = pendingRebootOf(marker, outcome, new Date());
      await this.state.awaitReboot(pending);
      msg.ack();
      this.watchRebootDeadline(pending);
      log.info(
        { deadline: pending.rebootDeadline },
        'reboot command issued; the task completes when the agent is back',
      );
      return;
    }
    await this.finish(marker, outcome, true, deliveredAt, log);
    msg.ack();
  }

  /**
   * Stops the process group an interrupted task left running (SIGTERM, SIGKILL after the grace),
   * if it is proven to be the task's; says what became of it.
   */
  private async stopLeftovers(marker: TaskMarker | undefined): Promise<LeftoverGroupState | undefined> {
    const group = leftoverGroupOf(marker, (k) => this.journal.get(k));
    if (!marker || !group) return undefined;
    const result = await stopLeftoverGroup(group);
    const log = this.taskLog(marker);
    const fields = { pgid: group.pgid, pids: result.pids, leftover: result.state };
    if (result.state === 'stopped') log.warn(fields, 'stopped the processes the interrupted task left running');
    else if (result.state === 'survived')
      log.error(fields, 'the processes the interrupted task left running survived SIGKILL');
    else if (result.state === 'unconfirmed')
      log.info(fields, 'the recorded process group id now belongs to other processes; left alone');
    return result.state;
  }

  /**
   * Journals the outcome and reports it while the journal line is flushed to disk; returns once
   * both are done (the caller acknowledges the dispatch only then), and forgets the marker.
   * Reporting before the flush completes is safe: should the host die in between, the dispatch
   * comes back, the durable running marker has it reported interrupted, and the orchestrator
   * ignores an outcome for a task it already settled.
   */
  private async finish(
    marker: TaskMarker,
    outcome: TaskOutcome,
    record = true,
    deliveredAt?: number,
    log: AgentLogger = this.taskLog(marker),
  ): Promise<void> {
    // Throws when the line cannot be written: nothing is reported, the dispatch stays unacked.
    const flushed = record ? this.journal.append(marker.journalKey, outcome) : undefined;
    flushed?.catch(() => undefined); // awaited below; not an unhandled rejection meanwhile
    // What the agent adds around the task's process: from the dispatch's delivery to the report.
    const handledMs = deliveredAt === undefined ? undefined : Math.round((performance.now() - deliveredAt) * 100) / 100;
    await this.messaging.publishProgress(
      finishedMessage(marker, outcome, new Date()),
      progressMsgIds.done(marker.dispatchId),
      () => this.stopping,
    );
    await flushed;
    await this.state.forget(marker.dispatchId);
    if (record) this.metrics.taskFinished(marker.type, outcome.status, outcome.durationMs / 1000);
    const level = outcome.status === 'succeeded' ? 'info' : 'warn';
    log[level](
      {
        status: outcome.status,
        exitCode: outcome.exitCode,
        durationMs: outcome.durationMs,
        handledMs,
        error: outcome.error,
      },
      `task ${outcome.status}`,
    );
  }

  // The agent is still up at the deadline: the reboot never happened.
  private watchRebootDeadline(pending: TaskMarker): void {
    const ms = Math.max(0, Date.parse(pending.rebootDeadline as string) - Date.now());
    const timer = setTimeout(() => {
      this.rebootTimers.delete(pending.dispatchId);
      this.finish(pending, rebootOutcome(pending, new Date(), false)).catch((err: Error) =>
        this.taskLog(pending).error({ err: err.message }, 'cannot report the reboot timeout'),
      );
    }, ms);
    timer.unref();
    this.rebootTimers.set(pending.dispatchId, timer);
  }

  private taskLog(t: { runId: string; key: string; dispatchId: string; attempt: number }): AgentLogger {
    // `node` is on every agent line already.
    const { task } = taskBindings({ key: t.key });
    return this.log.child({ runId: t.runId, task, key: t.key, dispatchId: t.dispatchId, attempt: t.attempt });
  }
}

/** The output kept per try that the dispatch names, within bounds; the default otherwise. */
function logLimitOf(d: TaskDispatchMessage): number {
  const n = d.logLimitBytes;
  return typeof n === 'number' &&
    Number.isInteger(n) &&
    n >= TASK_LOG_LIMIT_BOUNDS.min &&
    n <= TASK_LOG_LIMIT_BOUNDS.max
    ? n
    : DEFAULT_TASK_LOG_LIMIT_BYTES;
}

// JsMsg's type does not expose the delivery's reply (ack) subject; its implementation does.
function replySubjectOf(msg: JsMsg): string | undefined {
  const reply = (msg as unknown as { reply?: unknown }).reply;
  return typeof reply === 'string' && reply !== '' ? reply : undefined;
}
