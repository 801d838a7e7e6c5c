import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { executionSubjects, phaseAfterEvent, RUN_PHASES } from '@granule/contracts';
import type { RunPhaseName } from '@granule/contracts';
import type { TaskDispatchMessage } from '@granule/contracts';
import { dispatchIdOf, isTerminalRunEvent } from '@granule/run-events';
import { NATS_OUTBOX_CONSUMER } from '@granule/event-store';
import type { EventStore, PublishedEvent } from '@granule/event-store';
import type { GranuleMetrics, OrchestratorMetrics } from '@granule/observability';
import type { Logger } from '@granule/service-kit';

/** `granule_runs` states: the phases a run's last event gives (the same as `granule runs list`). */
export const RUN_STATES = RUN_PHASES;

const TASK_STATE_OF_EVENT: Record<string, string> = {
  TaskSucceeded: 'succeeded',
  TaskFailed: 'failed',
  TaskTimedOut: 'timed_out',
  TaskSkipped: 'skipped',
};

/** Bounds every map kept here: a long outage of terminal events must not grow memory without end. */
const MAX_TRACKED = 100_000;

/**
 * Turns the outbox's published run events (and the dispatch messages, for task types) into
 * `granule_task_runs_total` and `granule_dispatch_to_start_seconds`. No I/O: `RunMetricsFeed`
 * feeds it. An event seen twice (the outbox is at-least-once) is counted once.
 */
export class RunEventMetrics {
  /** `<runId>/<key>` → task type, from dispatch messages. */
  private readonly types = new Map<string, string>();
  /** Dispatch id (`dispatchIdOf`) → TaskDispatched time (ms). */
  private readonly dispatchedAt = new Map<string, number>();
  /** Dispatch id (`dispatchIdOf`) → TaskStarted time (ms), when it came before its TaskDispatched. */
  private readonly startedAt = new Map<string, number>();
  private readonly seen = new Set<string>();

  constructor(
    private readonly metrics: Pick<GranuleMetrics, 'taskRuns' | 'dispatchToStart'>,
    private readonly counters?: Pick<OrchestratorMetrics, 'runsStarted' | 'runsEnded' | 'dispatches'>,
  ) {}

  /** Remembers the task type of a dispatch (events carry only the key). */
  recordDispatch(message: Pick<TaskDispatchMessage, 'runId' | 'key' | 'type'>): void {
    remember(this.types, `${message.runId}/${message.key}`, message.type);
  }

  /** Updates the metrics from one committed event of a run stream; other events are ignored. */
  recordEvent(event: Pick<PublishedEvent, 'type' | 'data' | 'streamId' | 'globalPosition'>): void {
    if (!event.streamId.startsWith('run-') || this.seen.has(event.globalPosition)) return;
    remember(this.seen, event.globalPosition);
    const runId = event.streamId.slice('run-'.length);
    if (event.type === 'DeploymentRequested') this.counters?.runsStarted.inc();
    // A terminal event (`TERMINAL_RUN_EVENTS`): `granule_runs_ended_total{outcome}` takes the phase it gives.
    else if (isTerminalRunEvent(event.type)) this.counters?.runsEnded.inc({ outcome: phaseAfterEvent(event.type) });
    else if (event.type === 'TaskDispatched') this.counters?.dispatches.inc();
    const data = event.data as { key?: string; attempt?: number; at?: string };
    if (typeof data.key !== 'string') return;
    const attemptKey = dispatchIdOf(runId, data.key, data.attempt ?? 0);
    if (event.type === 'TaskDispatched' || event.type === 'TaskStarted') {
      // Either may arrive first (a re-published batch, an outbox handover): pair them whichever comes first.
      const at = Date.parse(data.at ?? '');
      if (Number.isNaN(at)) return;
      const [mine, other] =
        event.type === 'TaskDispatched' ? [this.dispatchedAt, this.startedAt] : [this.startedAt, this.dispatchedAt];
      const pair = other.get(attemptKey);
      if (pair === undefined) return remember(mine, attemptKey, at);
      other.delete(attemptKey);
      const [dispatched, started] = event.type === 'TaskDispatched' ? [at, pair] : [pair, at];
      // The start time is the agent's clock: a skew making it earlier than the dispatch counts as 0.
      this.metrics.dispatchToStart.observe(Math.max(0, started - dispatched) / 1000);
    } else if (TASK_STATE_OF_EVENT[event.type]) {
      this.dispatchedAt.delete(attemptKey);
      this.startedAt.delete(attemptKey);
      const typeKey = `${runId}/${data.key}`;
      this.metrics.taskRuns.inc({ state: TASK_STATE_OF_EVENT[event.type], type: this.types.get(typeKey) ?? 'unknown' });
      this.types.delete(typeKey);
    }
  }
}

function remember<K, V>(collection: Map<K, V> | Set<K>, key: K, value?: V): void {
  if (collection.size >= MAX_TRACKED) collection.delete(collection.keys().next().value as K);
  if (collection instanceof Map) collection.set(key, value as V);
  else collection.add(key);
}

/** Counts of run streams by the phase their last event gives (`RUN_STATES`). */
export async function countRunsByState(
  store: Pick<EventStore, 'countStreamsByLastEvent'>,
): Promise<Record<RunPhaseName, number>> {
  const counts = Object.fromEntries(RUN_STATES.map((s) => [s, 0])) as Record<RunPhaseName, number>;
  for (const [type, n] of await store.countStreamsByLastEvent('run')) counts[phaseAfterEvent(type)] += n;
  return counts;
}

export interface RunMetricsFeedDeps {
  nats: NatsConnection;
  store: Pick<EventStore, 'countStreamsByLastEvent' | 'countEvents' | 'consumerLag'>;
  logger: Logger;
  subjectPrefix: string;
  /** Checkpoint whose lag is exported; default the NATS outbox's. */
  outboxConsumer?: string;
}

/**
 * Feeds the orchestrator's Granule metrics without touching the coordinator: task counters and
 * dispatch-to-start latency from the committed events the outbox publishes on
 * `<prefix>.events.run.>` (task types from `<prefix>.dispatch.>`), and at every scrape the run
 * states, the event count and the outbox lag from SQL. Every replica sees every event, so
 * every replica exports the same cluster-wide values (aggregate with `max`, not `sum`).
 */
export class RunMetricsFeed {
  private readonly events: RunEventMetrics;
  private subscriptions: Subscription[] = [];

  constructor(
    private readonly metrics: GranuleMetrics,
    private readonly deps: RunMetricsFeedDeps,
    counters?: Pick<OrchestratorMetrics, 'runsStarted' | 'runsEnded' | 'dispatches'>,
  ) {
    this.events = new RunEventMetrics(metrics, counters);
  }

  start(): void {
    const { nats, logger, subjectPrefix } = this.deps;
    const subjects = executionSubjects(subjectPrefix);
    const decode = <T>(data: Uint8Array, subject: string): T | undefined => {
      try {
        return JSON.parse(new TextDecoder().decode(data)) as T;
      } catch {
        logger.warn({ subject }, 'metrics: undecodable message ignored');
        return undefined;
      }
    };
    this.subscriptions = [
      nats.subscribe(subjects.dispatch.all, {
        callback: (err, msg) => {
          const message = err ? undefined : decode<TaskDispatchMessage>(msg.data, msg.subject);
          if (message?.runId && message.key && message.type) this.events.recordDispatch(message);
        },
      }),
      nats.subscribe(`${subjectPrefix}.events.run.>`, {
        callback: (err, msg) => {
          const event = err ? undefined : decode<PublishedEvent>(msg.data, msg.subject);
          if (event?.streamId && event.globalPosition) this.events.recordEvent(event);
        },
      }),
    ];
    const consumer = this.deps.outboxConsumer ?? NATS_OUTBOX_CONSUMER;
    this.metrics.addCollector(async () => {
      try {
        const [runs, appended, lag] = await Promise.all([
          countRunsByState(this.deps.store),
          this.deps.store.countEvents(),
          this.deps.store.consumerLag(consumer),
        ]);
        for (const [state, n] of Object.entries(runs)) this.metrics.runs.set({ state }, n);
        this.metrics.eventLogAppends.reset();
        this.metrics.eventLogAppends.inc(appended);
        this.metrics.consumerLag.set({ consumer }, lag);
      } catch (err) {
        logger.warn({ err: (err as Error).message }, 'metrics: cannot read the event log; keeping the last values');
      }
    });
  }

  stop(): void {
    for (const s of this.subscriptions) s.unsubscribe();
    this.subscriptions = [];
  }
}
