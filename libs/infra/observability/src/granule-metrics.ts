import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Buckets of `granule_dispatch_to_start_seconds`: an agent normally starts within a second; a busy or offline one takes minutes. */
export const DISPATCH_TO_START_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** Refreshes metric values just before a scrape (e.g. from SQL); a failure leaves the previous values. */
export type MetricsCollector = () => Promise<void> | void;

/** A service's Prometheus registry with the Granule metrics. */
export interface GranuleMetrics {
  registry: Registry;
  /** `granule_runs{state}`: runs by state (requested, queued, running, stopping, succeeded, failed, stopped, refused). */
  runs: Gauge<'state'>;
  /** `granule_task_runs_total{state,type}`: finished task runs (succeeded, failed, timed_out, skipped) by task type. */
  taskRuns: Counter<'state' | 'type'>;
  /** `granule_dispatch_to_start_seconds`: from the orchestrator's dispatch to the agent's start of a task. */
  dispatchToStart: Histogram;
  /** `granule_event_log_appends_total`: events appended to the event log; `rate()` gives the append rate. */
  eventLogAppends: Counter;
  /** `granule_event_log_consumer_lag{consumer}`: committed events a checkpointed consumer has not handled yet. */
  consumerLag: Gauge<'consumer'>;
  /** Adds a function run before every scrape. */
  addCollector(collector: MetricsCollector): void;
  /** Runs the collectors, then renders the registry in the Prometheus text format. */
  render(): Promise<string>;
  /** `text/plain; version=0.0.4; charset=utf-8`. */
  contentType: string;
}

export interface CreateMetricsOptions {
  /**
   * Register the Granule run metrics (`granule_runs`, ...). Default true; services that never
   * feed them pass false so their `/metrics` only shows what they measure.
   */
  runMetrics?: boolean;
  /** Node.js process metrics (`process_*`, `nodejs_*`). Default true. */
  processMetrics?: boolean;
  /**
   * Sampling interval of the event-loop lag metrics (`nodejs_eventloop_lag_*`), in ms. Each
   * sample wakes the process: prom-client's default of 10 ms costs an otherwise idle process
   * several ms of CPU per second on a small VM. Default `DEFAULT_EVENT_LOOP_PRECISION_MS`.
   */
  eventLoopPrecisionMs?: number;
}

/** Default sampling interval of the event-loop lag metrics (ms): ten wake-ups a second. */
export const DEFAULT_EVENT_LOOP_PRECISION_MS = 100;

/**
 * Creates a registry (its own, not prom-client's global one) labelled `service=<service>` with
 * the default process metrics and the Granule metrics.
 */
export function createMetrics(service: string, options: CreateMetricsOptions = {}): GranuleMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  if (options.processMetrics ?? true)
    collectDefaultMetrics({
      register: registry,
      eventLoopMonitoringPrecision: options.eventLoopPrecisionMs ?? DEFAULT_EVENT_LOOP_PRECISION_MS,
    });
  const registers = (options.runMetrics ?? true) ? [registry] : [];
  const collectors: MetricsCollector[] = [];
  return {
    registry,
    runs: new Gauge({
      name: 'granule_runs',
      help: 'Deployment runs by state (from the last event of each run stream).',
      labelNames: ['state'],
      registers,
    }),
    taskRuns: new Counter({
      name: 'granule_task_runs_total',
      help: 'Finished task runs by final state and task type.',
      labelNames: ['state', 'type'],
      registers,
    }),
    dispatchToStart: new Histogram({
      name: 'granule_dispatch_to_start_seconds',
      help: 'Seconds from TaskDispatched to TaskStarted of a task attempt.',
      buckets: DISPATCH_TO_START_BUCKETS,
      registers,
    }),
    eventLogAppends: new Counter({
      name: 'granule_event_log_appends_total',
      help: 'Events appended to the event log.',
      registers,
    }),
    consumerLag: new Gauge({
      name: 'granule_event_log_consumer_lag',
      help: 'Committed events after the consumer checkpoint.',
      labelNames: ['consumer'],
      registers,
    }),
    addCollector(collector) {
      collectors.push(collector);
    },
    async render() {
      await Promise.all(
        collectors.map((c) =>
          Promise.resolve()
            .then(c)
            .catch(() => undefined),
        ),
      );
      return registry.metrics();
    },
    contentType: registry.contentType,
  };
}
