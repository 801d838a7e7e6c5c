import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import { GranuleError } from '@granule/core';
import { phaseAfterEvent, runStreamId } from '@granule/run-events';
import type {
  ExecutionSubjects,
  QueryReply,
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
import type { PlanStore } from '@granule/plan-store';
import type { EventStore } from '@granule/event-store';
import { buildReport } from '@granule/deployment-strategy';
import { foldStrategyRun, isStrategyParent } from '@granule/strategy-run';
import type { StrategyRun } from '@granule/strategy-run';
import { foldRun, instanceStatuses, summarizeRun } from '@granule/deployment-run';
import type { PlanSource } from '@granule/run-coordination';

class QueryError extends GranuleError<'RUN_UNKNOWN' | 'BAD_QUERY'> {}

/** Answers run history queries (`runs.list`, `runs.events`, `runs.show`) from the event log. */
export class RunQueriesResponder {
  private readonly subscriptions: Subscription[] = [];

  constructor(
    private readonly nats: NatsConnection,
    private readonly subjects: ExecutionSubjects,
    private readonly store: EventStore,
    private readonly dataSource: DataSource,
    private readonly plans: PlanSource,
    private readonly documents: PlanStore,
  ) {}

  start(): void {
    const answer = <Q, R>(subject: string, handle: (q: Q) => Promise<R>): void => {
      this.subscriptions.push(
        this.nats.subscribe(subject, {
          queue: 'orchestrator',
          callback: (err, msg) => {
            if (err) return;
            void (async () => {
              let reply: QueryReply<R>;
              try {
                reply = {
                  ok: true,
                  result: await handle(
                    msg.data.length ? (JSON.parse(new TextDecoder().decode(msg.data)) as Q) : ({} as Q),
                  ),
                };
              } catch (e) {
                reply = {
                  ok: false,
                  code: e instanceof GranuleError ? e.code : 'INTERNAL',
                  message: (e as Error).message,
                };
              }
              msg.respond(JSON.stringify(reply));
            })();
          },
        }),
      );
    };
    answer<RunsListRequest, RunListEntry[]>(this.subjects.runs.list, (q) => this.list(q));
    answer<RunEventsRequest, RunEventEntry[]>(this.subjects.runs.events, (q) => this.events(q));
    answer<RunShowRequest, RunSummary>(this.subjects.runs.show, (q) => this.show(q));
    answer<RunGraphRequest, RunGraphReply>(this.subjects.runs.graph, (q) => this.graph(q));
  }

  stop(): void {
    for (const s of this.subscriptions) s.unsubscribe();
  }

  async list(q: RunsListRequest): Promise<RunListEntry[]> {
    const limit = Math.min(Math.max(q.limit ?? 50, 1), 1000);
    const rows: {
      stream_id: string;
      version: string;
      first_data: { envId?: string; graph?: string };
      last_type: string;
      started: Date;
      updated: Date;
    }[] = await this.dataSource.query(
      `SELECT s.stream_id, s.version, f.data AS first_data, s.last_event_type AS last_type, f.created_at AS started, s.updated_at AS updated
         FROM granule_streams s
         JOIN granule_events f ON f.stream_id = s.stream_id AND f.stream_version = 1
        WHERE s.stream_type = 'run'
        ORDER BY s.created_at DESC LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({
      runId: r.stream_id.slice('run-'.length),
      phase: phaseAfterEvent(r.last_type),
      events: Number(r.version),
      ...(r.first_data.envId ? { envId: r.first_data.envId } : {}),
      ...(r.first_data.graph ? { graph: r.first_data.graph } : {}),
      startedAt: new Date(r.started).toISOString(),
      updatedAt: new Date(r.updated).toISOString(),
    }));
  }

  async events(q: RunEventsRequest): Promise<RunEventEntry[]> {
    if (typeof q.runId !== 'string') throw new QueryError('BAD_QUERY', 'runId: expected a run id');
    const stored = await this.store.readStream(runStreamId(q.runId), {
      fromVersion: (q.after ?? 0) + 1,
      ...(q.upTo ? { toVersion: q.upTo } : {}),
    });
    if (
      stored.length === 0 &&
      !(q.after && q.after > 0) &&
      (await this.store.readStreamVersion(runStreamId(q.runId))) === null
    ) {
      throw new QueryError('RUN_UNKNOWN', `run ${q.runId} does not exist (granule runs list shows the runs)`);
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
    if (typeof q.runId !== 'string') throw new QueryError('BAD_QUERY', 'give runId or planId');
    const events = (await this.events({ runId: q.runId })).map((e) => e.event);
    const phases = events.flatMap((e) => (e.type === 'StrategyPhaseStarted' ? [e.data.childRunId] : []));
    const accepted = events.find((e) => e.type === 'PlanAccepted');
    if (accepted?.type !== 'PlanAccepted') {
      throw new QueryError(
        'BAD_QUERY',
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
    const entries = await this.events({ runId: q.runId, ...(q.at ? { upTo: q.at } : {}) });
    const events = entries.map((e) => e.event);
    const strategyRun = isStrategyParent(events[0]) ? foldStrategyRun(q.runId, events) : undefined;
    if (strategyRun?.groups) return this.showStrategy(q.runId, events, strategyRun);
    const planned = events.find((e) => e.type === 'PlanAccepted');
    const plan = planned?.type === 'PlanAccepted' ? await this.plans.load(planned.data.planId) : undefined;
    return summarizeRun(foldRun(q.runId, events, plan), events);
  }

  /** A strategy run: its groups from the strategy-run decider's fold, task counts summed over its phase runs. */
  private async showStrategy(runId: string, events: RunEvent[], strategyRun: StrategyRun): Promise<RunSummary> {
    const report = buildReport(strategyRun.groups as NonNullable<StrategyRun['groups']>);
    const parent = summarizeRun(foldRun(runId, events), events);
    const children = await Promise.all(strategyRun.phaseRuns.map((id) => this.show({ runId: id })));
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
