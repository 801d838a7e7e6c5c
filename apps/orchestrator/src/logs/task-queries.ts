import { Inject, Injectable } from '@nestjs/common';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { InvalidInputError } from '@granule/core';
import {
  executionSubjects,
  isTerminalRunEvent,
  phaseAfterEvent,
  type RunEvent,
  type RunLogsReply,
  type RunLogsRequest,
  type RunTasksReply,
  type RunTasksRequest,
} from '@granule/contracts';
import { STATUS_NAMES, foldRun, taskInstances } from '@granule/deployment-run';
import { TaskLogStore } from '@granule/event-store';
import type { PlanSource } from '@granule/run-coordination';
import { foldStrategyRun, isStrategyParent } from '@granule/strategy-run';
import { OrchestratorConfig } from '../orchestrator.config';
import { NATS } from '../orchestrator.tokens';
import { StoredPlanSource } from '../runs/adapters/plan-source.adapter';
import { RunQueries } from '../runs/run-queries';

/** Records in one `runs.logs` answer at most. */
export const LOG_PAGE_RECORDS = 2000;
/**
 * Output in one `runs.logs` answer at most (bytes of text): an answer stays one NATS message, so
 * a reader pages through a long log instead of waiting for one large reply.
 */
export const LOG_PAGE_BYTES = 256 * 1024;

function badQuery(message: string): InvalidInputError {
  return new InvalidInputError([{ severity: 'error', code: 'INVALID_INPUT', message }]);
}

/** The runs whose tasks a run's view shows: a strategy run's phase runs (from its fold), else the run itself. */
const taskRunsOf = (runId: string, events: RunEvent[]): string[] =>
  isStrategyParent(events[0]) ? foldStrategyRun(runId, events).phaseRuns : [runId];

/**
 * The per-task view of a run (`runs.tasks`: every task instance with its status, tries, exit
 * code, start and duration) and its task logs (`runs.logs`, ADR 0030). A strategy run answers
 * for its phase runs.
 */
@Injectable()
export class TaskQueries {
  constructor(
    @Inject(RunQueries) private readonly runs: RunQueries,
    @Inject(StoredPlanSource) private readonly plans: PlanSource,
    @Inject(TaskLogStore) private readonly logStore: TaskLogStore,
    @Inject(NATS) private readonly nats: NatsConnection,
    @Inject(OrchestratorConfig) private readonly config: OrchestratorConfig,
  ) {}

  async tasks(q: RunTasksRequest): Promise<RunTasksReply> {
    if (typeof q.runId !== 'string' || q.runId === '') throw badQuery('runId: expected a run id');
    if (q.status !== undefined && !(STATUS_NAMES as readonly string[]).includes(q.status))
      throw badQuery(`status: expected one of ${STATUS_NAMES.join(', ')}, got ${JSON.stringify(q.status)}`);
    if (q.node !== undefined && (typeof q.node !== 'string' || q.node === ''))
      throw badQuery('node: expected a node uid');
    const events = (await this.runs.events({ runId: q.runId })).map((e) => e.event);
    const filter = { ...(q.node ? { node: q.node } : {}), ...(q.status ? { status: q.status } : {}) };
    const runIds = taskRunsOf(q.runId, events);
    const tasks: RunTasksReply['tasks'] = [];
    for (const runId of runIds) {
      const own = runId === q.runId ? events : (await this.runs.events({ runId })).map((e) => e.event);
      const planned = own.find((e) => e.type === 'PlanAccepted');
      if (planned?.type !== 'PlanAccepted') continue;
      const state = foldRun(runId, own, await this.plans.load(planned.data.planId));
      for (const row of taskInstances(state, own, filter)) tasks.push({ ...row, runId });
    }
    return { runId: q.runId, phase: phaseAfterEvent(events.at(-1)?.type ?? ''), tasks };
  }

  async logs(q: RunLogsRequest): Promise<RunLogsReply> {
    if (typeof q.runId !== 'string' || q.runId === '') throw badQuery('runId: expected a run id');
    if (q.try !== undefined && !(Number.isInteger(q.try) && q.try >= 1))
      throw badQuery(`attempt: expected a whole number from 1, got ${JSON.stringify(q.try)}`);
    if (q.after !== undefined && !/^\d{1,19}$/.test(String(q.after)))
      throw badQuery(`after: expected a record id, got ${JSON.stringify(q.after)}`);
    const limit = Math.min(Math.max(Number(q.limit) || LOG_PAGE_RECORDS, 1), LOG_PAGE_RECORDS);
    const events = (await this.runs.events({ runId: q.runId })).map((e) => e.event);
    const runIds = taskRunsOf(q.runId, events);
    const page = await this.logStore.read({
      runIds,
      ...(q.node ? { node: q.node } : {}),
      ...(q.task ? { task: q.task } : {}),
      ...(q.try ? { try: q.try } : {}),
      ...(q.stderrOnly ? { stderrOnly: true } : {}),
      ...(q.after ? { afterId: String(q.after) } : {}),
      limit,
    });
    let bytes = 0;
    let count = 0;
    while (count < page.records.length && (count === 0 || bytes + page.records[count].data.length <= LOG_PAGE_BYTES))
      bytes += page.records[count++].data.length;
    const records = page.records.slice(0, count);
    const more = page.more || count < page.records.length;
    // Ended: the run has, and no output of it waits in the LOGS stream to be stored.
    const ended = !more && isTerminalRunEvent(events.at(-1)?.type) && !(await this.outputWaiting(runIds));
    return { records, more, ended, runIds, limitBytes: this.config.taskLogLimitBytes };
  }

  /** True while the LOGS stream holds output of one of the runs (stored output leaves the work queue). */
  private async outputWaiting(runIds: string[]): Promise<boolean> {
    const s = executionSubjects(this.config.subjectPrefix);
    const jsm = await jetstreamManager(this.nats);
    for (const runId of runIds) {
      const info = await jsm.streams.info(s.logs.stream, { subjects_filter: s.logs.forRun(runId) });
      if (Object.values(info.state.subjects ?? {}).some((n) => n > 0)) return true;
    }
    return false;
  }
}
