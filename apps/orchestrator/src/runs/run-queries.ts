import { Inject, Injectable } from '@nestjs/common';
import { InvalidInputError } from '@granule/core';
import { lastEventTypesOf, phaseAfterEvent, RUN_PHASES, RunError, runStreamId } from '@granule/run-events';
import type { RunPhaseName } from '@granule/run-events';
import type {
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
import { PlanStore } from '@granule/plan-store';
import { EventStore } from '@granule/event-store';
import type { StreamFilter } from '@granule/event-store';
import { StoredPlanSource } from './adapters/plan-source.adapter';
import { buildReport } from '@granule/deployment-strategy';
import { foldStrategyRun, isStrategyParent } from '@granule/strategy-run';
import type { StrategyRun } from '@granule/strategy-run';
import { foldRun, instanceStatuses, summarizeRun } from '@granule/deployment-run';
import type { PlanSource } from '@granule/run-coordination';

function badQuery(message: string): InvalidInputError {
  return new InvalidInputError([{ severity: 'error', code: 'INVALID_INPUT', message }]);
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
  const date = (value: unknown, what: string): Date => {
    const at = typeof value === 'string' ? new Date(value) : new Date(NaN);
    if (Number.isNaN(at.getTime())) throw badQuery(`${what}: expected a date and time, got ${JSON.stringify(value)}`);
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
  ) {}

  async list(q: RunsListRequest): Promise<RunListEntry[]> {
    const limit = Math.min(Math.max(q.limit ?? 50, 1), 1000);
    const streams = await this.store.newestStreams('run', limit, listFilter(q));
    return streams.map((s) => {
      const first = s.first.data as { envId?: string; graph?: string; requestedBy?: string; check?: boolean };
      return {
        runId: s.streamId.slice('run-'.length),
        phase: phaseAfterEvent(s.lastEventType),
        events: s.version,
        ...(first.envId ? { envId: first.envId } : {}),
        ...(first.graph ? { graph: first.graph } : {}),
        ...(first.check ? { check: true } : {}),
        ...(first.requestedBy ? { requestedBy: first.requestedBy } : {}),
        startedAt: s.createdAt.toISOString(),
        updatedAt: s.updatedAt.toISOString(),
      };
    });
  }

  async events(q: RunEventsRequest): Promise<RunEventEntry[]> {
    if (typeof q.runId !== 'string') throw badQuery('runId: expected a run id');
    const stored = await this.store.readStream(runStreamId(q.runId), {
      fromVersion: (q.after ?? 0) + 1,
      ...(q.upTo ? { toVersion: q.upTo } : {}),
    });
    if (
      stored.length === 0 &&
      !(q.after && q.after > 0) &&
      (await this.store.readStreamVersion(runStreamId(q.runId))) === null
    ) {
      throw new RunError('RUN_UNKNOWN', `run ${q.runId} does not exist (granule runs list shows the runs)`);
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

  /** A run's plan with each entry's status (`runs.graph`), or a stored plan by id. */
  async graph(q: RunGraphRequest): Promise<RunGraphReply> {
    if (q.planId) return { instances: (await this.documents.loadDocument(q.planId)).instances };
    if (typeof q.runId !== 'string') throw badQuery('give runId or planId');
    const events = (await this.events({ runId: q.runId })).map((e) => e.event);
    const phases = events.flatMap((e) => (e.type === 'StrategyPhaseStarted' ? [e.data.childRunId] : []));
    const accepted = events.find((e) => e.type === 'PlanAccepted');
    if (accepted?.type !== 'PlanAccepted') {
      throw new RunError(
        'RUN_NO_PLAN',
        phases.length
          ? `run ${q.runId} is a strategy run; each phase run has a graph: ${phases.join(', ')}`
          : `run ${q.runId} has no plan (it was refused or is still planning)`,
      );
    }
    const plan = await this.plans.load(accepted.data.planId);
    const state = foldRun(q.runId, events, plan);
    return {
      instances: (await this.documents.loadDocument(accepted.data.planId)).instances,
      statuses: Object.fromEntries(instanceStatuses(state)),
    };
  }

  async show(q: RunShowRequest): Promise<RunSummary> {
    return this.showAsOf(q.runId, q.at);
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
    if (strategyRun?.groups)
      return this.showStrategy(runId, events, strategyRun, at || until ? (until ?? entries.at(-1)?.at) : undefined);
    const planned = events.find((e) => e.type === 'PlanAccepted');
    const plan = planned?.type === 'PlanAccepted' ? await this.plans.load(planned.data.planId) : undefined;
    return summarizeRun(foldRun(runId, events, plan), events);
  }

  /** A strategy run: its groups from the strategy-run decider's fold, task counts summed over its phase runs. */
  private async showStrategy(
    runId: string,
    events: RunEvent[],
    strategyRun: StrategyRun,
    asOf?: string,
  ): Promise<RunSummary> {
    const report = buildReport(strategyRun.groups as NonNullable<StrategyRun['groups']>);
    const parent = summarizeRun(foldRun(runId, events), events);
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
}

function zero<T extends object>(counts: T): T {
  return Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, typeof v === 'number' ? 0 : v])) as T;
}
