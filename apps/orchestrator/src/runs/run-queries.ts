import { Inject, Injectable, Optional } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { durationSeconds, InvalidInputError } from '@granule/core';
import {
  lastEventTypesOf,
  phaseAfterEvent,
  RUN_PHASES,
  RunError,
  runStreamId,
  runUnknownMessage,
} from '@granule/run-events';
import type { CommandExpired, RunPhaseName } from '@granule/run-events';
import type {
  ExpiredCommandEntry,
  RunEvent,
  RunEventEntry,
  RunEventsRequest,
  RunGraphReply,
  RunGraphRequest,
  RunListEntry,
  RunShowRequest,
  RunSummary,
  RunsListRequest,
} from '@granule/contracts';
import { MAX_REPLY_MESSAGES, RUN_GRAPH_PAGE_BYTES, RUN_GRAPH_PAGE_MAX, RUNS_LIST_MAX } from '@granule/contracts';
import { PlanRangeError, PlanStore } from '@granule/plan-store';
import { NATS } from '../orchestrator.tokens';
import { EventStore } from '@granule/event-store';
import type { StreamFilter } from '@granule/event-store';
import { StoredPlanSource } from './adapters/plan-source.adapter';
import { buildReport } from '@granule/deployment-strategy';
import { foldStrategyRun, isAcceptedStrategyRun, isStrategyParent } from '@granule/strategy-run';
import type { AcceptedStrategyRun } from '@granule/strategy-run';
import { foldRun, initialRunState, STATUS_NAMES, summarizeRun } from '@granule/deployment-run';
import type { PlanSource } from '@granule/run-coordination';

function badQuery(message: string): InvalidInputError {
  return new InvalidInputError([{ severity: 'error', code: 'INVALID_INPUT', message }]);
}

/**
 * An event version from a query (`after`, `at`): a whole number from 0, or absent. One past what
 * any run reaches is still a version, beyond the end: it is read as the largest JavaScript counts
 * exactly (less one, so `after + 1` is too), never a number PostgreSQL refuses as a bigint.
 */
function versionOf(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
    throw badQuery(`${name}: expected a whole number from 0, got ${JSON.stringify(value)}`);
  return Math.min(value, Number.MAX_SAFE_INTEGER - 1);
}

/** A `runs.graph` cursor (`<index>.<planId>`, as a reply's `next` gives it) → the index it starts at. */
export function parseGraphCursor(cursor: unknown, planId: string): number {
  const m = typeof cursor === 'string' ? /^(\d{1,9})\.(.+)$/.exec(cursor) : null;
  if (!m)
    throw badQuery(`cursor: expected a page cursor as a previous reply's next gives it, got ${JSON.stringify(cursor)}`);
  if (m[2] !== planId) throw badQuery(`cursor: it pages plan ${m[2]}, not this graph's plan ${planId}`);
  return Number(m[1]);
}

/** What `runs list` filters by, checked: an unknown phase or a date that is not one is named. */
function listFilter(q: RunsListRequest): StreamFilter {
  const filter: StreamFilter = {};
  if (q.phases !== undefined) {
    const unknown = (Array.isArray(q.phases) ? q.phases : [q.phases]).filter(
      (p) => !(RUN_PHASES as readonly unknown[]).includes(p),
    );
    if (!Array.isArray(q.phases) || unknown.length > 0)
      throw badQuery(
        `status: expected ${RUN_PHASES.join(', ')}, got ${JSON.stringify(unknown.join(', ') || q.phases)}`,
      );
    filter.lastEventTypes = lastEventTypesOf(q.phases as RunPhaseName[]);
  }
  // A date and time, or a duration back from now (30m, 2h, 7d), as `granule runs list` takes them.
  const date = (value: unknown, what: string): Date => {
    const back = typeof value === 'string' && /^\d{1,9}[smhd]$/.test(value.trim()) ? durationSeconds(value) : undefined;
    if (back !== undefined) return new Date(Date.now() - back * 1000);
    const at = typeof value === 'string' ? new Date(value) : new Date(NaN);
    if (Number.isNaN(at.getTime()))
      throw badQuery(
        `${what}: expected a date and time (2026-11-25T10:00:00Z) or a duration back from now (30m, 2h, 7d), got ${JSON.stringify(value)}`,
      );
    return at;
  };
  if (q.since !== undefined) filter.createdFrom = date(q.since, 'since');
  if (q.until !== undefined) filter.createdBefore = date(q.until, 'until');
  if (q.envId !== undefined) {
    if (typeof q.envId !== 'string' || q.envId === '') throw badQuery('env: expected an environment id or name');
    filter.firstData = { key: 'envId', values: [q.envId] };
  }
  return filter;
}

/**
 * Run history from the event log, for `runs list`, `runs events`, `runs show` (the state after
 * event N: the same folds the coordinators use) and `runs graph`.
 */
@Injectable()
export class RunQueries {
  constructor(
    @Inject(EventStore) private readonly store: EventStore,
    @Inject(StoredPlanSource) private readonly plans: PlanSource,
    @Inject(PlanStore) private readonly documents: PlanStore,
    @Optional() @Inject(NATS) private readonly nats?: Pick<NatsConnection, 'info'>,
  ) {}

  /** Bytes of instances in one graph page at most (tests make it small). */
  graphPageBytes = RUN_GRAPH_PAGE_BYTES;

  async list(q: RunsListRequest): Promise<RunListEntry[]> {
    const limit = Math.min(Math.max(q.limit ?? 50, 1), RUNS_LIST_MAX);
    const streams = await this.store.newestStreams('run', limit, listFilter(q));
    return streams.map((s) => {
      const first = s.first.data as {
        envId?: string;
        graph?: string;
        requestedBy?: string;
        check?: boolean;
        dryRun?: boolean;
        noop?: boolean;
      };
      return {
        runId: s.streamId.slice('run-'.length),
        phase: phaseAfterEvent(s.lastEventType),
        events: s.version,
        ...(first.envId ? { envId: first.envId } : {}),
        ...(first.graph ? { graph: first.graph } : {}),
        ...(first.check ? { check: true } : {}),
        ...(first.dryRun ? { dryRun: true } : {}),
        ...(first.noop ? { noop: true } : {}),
        ...(first.requestedBy ? { requestedBy: first.requestedBy } : {}),
        startedAt: s.createdAt.toISOString(),
        updatedAt: s.updatedAt.toISOString(),
      };
    });
  }

  async events(q: RunEventsRequest): Promise<RunEventEntry[]> {
    if (typeof q.runId !== 'string') throw badQuery('runId: expected a run id');
    const after = versionOf(q.after, 'after') ?? 0;
    const upTo = versionOf(q.upTo, 'at');
    const stored = await this.store.readStream(runStreamId(q.runId), {
      fromVersion: after + 1,
      ...(upTo ? { toVersion: upTo } : {}),
    });
    if (
      stored.length === 0 &&
      !(q.after && q.after > 0) &&
      (await this.store.readStreamVersion(runStreamId(q.runId))) === null
    ) {
      throw new RunError('RUN_UNKNOWN', runUnknownMessage(q.runId));
    }
    // An event past the end is a mistake to say, not the whole run to show as if it were asked for.
    if (q.upTo && (stored.length === 0 || stored[stored.length - 1].streamVersion < q.upTo)) {
      const last = (await this.store.readStreamVersion(runStreamId(q.runId))) ?? 0;
      if (last < q.upTo)
        throw badQuery(
          `run ${q.runId} has ${last} event${last === 1 ? '' : 's'}: --at takes 1 to ${last}, got ${q.upTo}`,
        );
    }
    return stored.map((e) => ({
      version: e.streamVersion,
      at: new Date(e.createdAt).toISOString(),
      event: { type: e.type, data: e.data } as RunEvent,
    }));
  }

  /** `runs.events`: the run's events and, when asked, the expired commands that named it among them. */
  async eventsReply(q: RunEventsRequest): Promise<(RunEventEntry | ExpiredCommandEntry)[]> {
    const entries = await this.events(q);
    if (!q.expiredCommands || q.after || q.upTo) return entries;
    return withExpiredCommands(entries, await this.expiredCommands(q.runId));
  }

  /**
   * One page of a run's plan with each entry's status (`runs.graph`), or of a stored plan by id.
   * A page is read from the stored plan as a stream (the instances before it are counted, not
   * parsed) and stops at `limit` instances or `RUN_GRAPH_PAGE_BYTES` of them, so no answer holds
   * a large plan whole: its reply stays well within the chunks one reply may take.
   */
  async graph(q: RunGraphRequest): Promise<RunGraphReply> {
    if (q.limit !== undefined && !(Number.isInteger(q.limit) && q.limit >= 1 && q.limit <= RUN_GRAPH_PAGE_MAX))
      throw badQuery(`limit: expected a whole number from 1 to ${RUN_GRAPH_PAGE_MAX}, got ${JSON.stringify(q.limit)}`);
    if (q.planId) return this.graphPage(q.planId, q);
    if (typeof q.runId !== 'string') throw badQuery('give runId or planId');
    const events = (await this.events({ runId: q.runId })).map((e) => e.event);
    const phases = isStrategyParent(events[0]) ? foldStrategyRun(q.runId, events).phaseRuns : [];
    const accepted = events.find((e) => e.type === 'PlanAccepted');
    if (accepted?.type !== 'PlanAccepted') {
      throw new RunError(
        'RUN_NO_PLAN',
        phases.length
          ? `run ${q.runId} is a strategy run; each phase run has a graph: ${phases.join(', ')}`
          : `run ${q.runId} has no plan (it was refused or is still planning)`,
      );
    }
    const planId = accepted.data.planId;
    const page = await this.graphPage(planId, q);
    const state = foldRun(q.runId, events, await this.plans.load(planId));
    const statuses: Record<string, string> = {};
    for (const i of page.instances) {
      const key = `${i.task}@${i.node}`;
      const at = state.plan?.index.get(key);
      if (at !== undefined) statuses[key] = STATUS_NAMES[state.status[at]];
    }
    return { ...page, statuses };
  }

  private async graphPage(planId: string, q: RunGraphRequest): Promise<RunGraphReply> {
    const from = q.cursor === undefined ? 0 : parseGraphCursor(q.cursor, planId);
    const limit = q.limit ?? RUN_GRAPH_PAGE_MAX;
    const maxPayload = this.nats?.info?.max_payload ?? 1024 * 1024;
    const budget = Math.min(this.graphPageBytes, (maxPayload * MAX_REPLY_MESSAGES) / 2);
    let bytes = 0;
    let range;
    try {
      range = await this.documents.loadRange(planId, from, (inst, taken) => {
        if (taken >= limit) return false;
        bytes += JSON.stringify(inst).length;
        return bytes <= budget;
      });
    } catch (err) {
      if (err instanceof PlanRangeError)
        throw badQuery(`cursor: ${err.message} (start again without --cursor, or from the last reply's next)`);
      throw err;
    }
    return {
      instances: range.instances,
      ...(range.end ? { total: range.total } : { next: `${from + range.instances.length}.${planId}` }),
    };
  }

  async show(q: RunShowRequest): Promise<RunSummary> {
    const summary = await this.showAsOf(q.runId, q.at);
    const expired = q.at ? [] : await this.expiredCommands(q.runId);
    return expired.length ? { ...summary, expiredCommands: expired.map((e) => e.event.data) } : summary;
  }

  /**
   * The run after its event `at` (all of it without), or, with `until`, as its events committed
   * by then made it: a strategy run's phase runs are shown as they were at the parent's event.
   */
  private async showAsOf(runId: string, at?: number, until?: string): Promise<RunSummary> {
    let entries = await this.events({ runId, ...(at ? { upTo: at } : {}) });
    if (until) entries = entries.filter((e) => e.at <= until);
    const events = entries.map((e) => e.event);
    const strategyRun = isStrategyParent(events[0]) ? foldStrategyRun(runId, events) : undefined;
    if (strategyRun && isAcceptedStrategyRun(strategyRun))
      return this.showStrategy(runId, events, strategyRun, at || until ? (until ?? entries.at(-1)?.at) : undefined);
    const planned = events.find((e) => e.type === 'PlanAccepted');
    const plan = planned?.type === 'PlanAccepted' ? await this.plans.load(planned.data.planId) : undefined;
    return summarizeRun(foldRun(runId, events, plan), events);
  }

  /** A strategy run: its groups from the strategy-run decider's fold, task counts summed over its phase runs. */
  private async showStrategy(
    runId: string,
    events: RunEvent[],
    strategyRun: AcceptedStrategyRun,
    asOf?: string,
  ): Promise<RunSummary> {
    const report = buildReport(strategyRun.groups);
    // The strategy run has no plan of its own: zero counts, and where it stands from its fold.
    const { request } = strategyRun;
    const reason = strategyRun.reason ?? strategyRun.stopReason;
    const parent: RunSummary = {
      ...summarizeRun(initialRunState(runId), []),
      phase: strategyRun.phase,
      version: events.length,
      ...(request?.requestedBy ? { requestedBy: request.requestedBy } : {}),
      ...(request?.check ? { check: true } : {}),
      ...(request?.dryRun ? { dryRun: true } : {}),
      ...(request?.noop ? { noop: true } : {}),
      ...(reason ? { reason } : {}),
    };
    const children = await Promise.all(strategyRun.phaseRuns.map((id) => this.showAsOf(id, undefined, asOf)));
    for (const child of children) {
      for (const [k, v] of Object.entries(child.totals)) parent.totals[k as keyof typeof parent.totals] += v;
      for (const [uid, counts] of Object.entries(child.nodes)) {
        const into = (parent.nodes[uid] ??= { ...zero(child.nodes[uid]), failedNode: false });
        for (const [k, v] of Object.entries(counts))
          if (k !== 'failedNode') (into as unknown as Record<string, number>)[k] += v as number;
        into.failedNode ||= counts.failedNode;
      }
      parent.failures.push(...child.failures);
      parent.running.push(...child.running);
      parent.failedTries = (parent.failedTries ?? 0) + (child.failedTries ?? 0);
      parent.retriedTasks = (parent.retriedTasks ?? 0) + (child.retriedTasks ?? 0);
    }
    return {
      ...parent,
      strategy: {
        outcome: report.outcome,
        groups: report.groups.map((g) => ({
          name: g.name,
          critical: g.critical,
          status: g.status,
          stage: g.stage,
          failures: g.failures,
        })),
        nodes: report.nodes,
        phaseRuns: strategyRun.phaseRuns,
      },
    };
  }

  /**
   * The stops and resumes that named a run and expired before an orchestrator took them, oldest
   * first. They are on streams of their own (`command-<id>`, ADR 0021): the index of streams by
   * type and last event reads those few, then their first event names the run.
   */
  async expiredCommands(runId: string): Promise<ExpiredCommandEntry[]> {
    const streams = await this.store.streamsEndingWith('command', ['CommandExpired'], {
      key: 'runId',
      values: [runId],
    });
    return streams.map((s) => ({
      stream: s.streamId,
      at: s.createdAt.toISOString(),
      event: s.first as unknown as CommandExpired,
    }));
  }
}

/** A run's events with the expired commands that named it, in the order they were recorded. */
function withExpiredCommands(
  events: RunEventEntry[],
  expired: ExpiredCommandEntry[],
): (RunEventEntry | ExpiredCommandEntry)[] {
  if (expired.length === 0) return events;
  const out: (RunEventEntry | ExpiredCommandEntry)[] = [];
  let next = 0;
  for (const e of events) {
    while (next < expired.length && expired[next].at < e.at) out.push(expired[next++]);
    out.push(e);
  }
  return [...out, ...expired.slice(next)];
}

function zero<T extends object>(counts: T): T {
  return Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, typeof v === 'number' ? 0 : v])) as T;
}
