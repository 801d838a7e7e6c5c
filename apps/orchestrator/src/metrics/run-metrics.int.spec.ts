import { randomBytes } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  createTestDatabase,
  EventStore,
  NATS_OUTBOX_CONSUMER,
  NatsOutboxPublisher,
  type TestDatabase,
} from '@granule/event-store';
import { connectTestNats, waitUntil } from '@granule/messaging';
import { createMetrics } from '@granule/observability';
import { createLogger } from '@granule/service-kit';
import { countRunsByState, RunMetricsFeed } from './run-metrics';

const at = (s: number): string => new Date(Date.UTC(2025, 0, 1, 0, 0, s)).toISOString();

describe('run metrics from the event log and the outbox feed', () => {
  let db: TestDatabase;
  let store: EventStore;
  let nats: NatsConnection;
  const prefix = `test.metrics${randomBytes(3).toString('hex')}`;

  beforeAll(async () => {
    db = await createTestDatabase('run_metrics');
    store = new EventStore(db.dataSource);
    nats = await connectTestNats('granule-run-metrics-test');
    await store.appendToStream(
      'run-a',
      [
        { type: 'DeploymentRequested', data: { runId: 'a' } },
        { type: 'PlanAccepted', data: {} },
      ],
      { expectedVersion: 'no_stream' },
    );
    await store.appendToStream(
      'run-b',
      [
        { type: 'DeploymentRequested', data: { runId: 'b' } },
        { type: 'DeploymentSucceeded', data: {} },
      ],
      { expectedVersion: 'no_stream' },
    );
    await store.appendToStream('run-c', [{ type: 'DeploymentRequested', data: { runId: 'c' } }], {
      expectedVersion: 'no_stream',
    });
    await store.appendToStream(
      'run-d',
      [
        { type: 'DeploymentRequested', data: { runId: 'd' } },
        { type: 'DeploymentFailed', data: {} },
      ],
      { expectedVersion: 'no_stream' },
    );
    await store.appendToStream('node-n1', [{ type: 'NodeRegistered', data: { uid: 'n1' } }], {
      expectedVersion: 'no_stream',
    });
  });

  afterAll(async () => {
    await nats.close();
    await db.drop();
  });

  it('counts runs by the state their last event gives, every state present', async () => {
    expect(await countRunsByState(store)).toEqual({
      requested: 1,
      queued: 0,
      running: 1,
      stopping: 0,
      succeeded: 1,
      failed: 1,
      stopped: 0,
      refused: 0,
      expired: 0,
    });
  });

  it('counts appended events and the events after a checkpoint (all of them without one)', async () => {
    expect(await store.countEvents()).toBe(8);
    expect(await store.consumerLag('nobody')).toBe(8);
    const [third] = await store.readAll({ maxCount: 3 }).then((events) => events.slice(2));
    await store.storeCheckpoint('halfway', {
      transactionId: third.transactionId,
      globalPosition: third.globalPosition,
    });
    expect(await store.consumerLag('halfway')).toBe(5);
  });

  it('feeds task counters and latency from the published events, and the SQL gauges at each scrape', async () => {
    const metrics = createMetrics('orchestrator', { processMetrics: false });
    const feed = new RunMetricsFeed(metrics, {
      nats,
      store,
      logger: createLogger('orchestrator', 'silent'),
      subjectPrefix: prefix,
    });
    feed.start();
    const outbox = new NatsOutboxPublisher(nats, store, { subjectPrefix: `${prefix}.events`, pollIntervalMs: 20 });
    try {
      await nats.flush();
      nats.publish(
        `${prefix}.dispatch.n1`,
        JSON.stringify({ runId: 'a', key: 'install@n1', node: 'n1', type: 'puppet', attempt: 1 }),
      );
      await nats.flush();
      // One append each: the task's events come from separate coordinator steps.
      await store.appendToStream(
        'run-a',
        [{ type: 'TaskDispatched', data: { key: 'install@n1', attempt: 1, dispatchId: 'a/install@n1/1', at: at(0) } }],
        { expectedVersion: 2 },
      );
      await store.appendToStream(
        'run-a',
        [{ type: 'TaskStarted', data: { key: 'install@n1', attempt: 1, at: at(2) } }],
        { expectedVersion: 3 },
      );
      await store.appendToStream(
        'run-a',
        [
          {
            type: 'TaskSucceeded',
            data: { key: 'install@n1', attempt: 1, exitCode: 0, durationMs: 5, outputTail: '', at: at(3) },
          },
        ],
        { expectedVersion: 4 },
      );
      outbox.start();
      await waitUntil(
        async () => (await store.consumerLag(NATS_OUTBOX_CONSUMER)) === 0,
        'the outbox to catch up',
        5000,
      );
      await waitUntil(
        async () =>
          (await metrics.render()).includes(
            'granule_task_runs_total{state="succeeded",type="puppet",service="orchestrator"} 1',
          ),
        'the task counter',
        5000,
      );
      const lines = (await metrics.render())
        .split('\n')
        .filter((l) => /^granule_(runs|event_log|dispatch_to_start_seconds_(sum|count))/.test(l));
      expect(lines).toEqual([
        'granule_runs{state="requested",service="orchestrator"} 1',
        'granule_runs{state="queued",service="orchestrator"} 0',
        'granule_runs{state="running",service="orchestrator"} 1',
        'granule_runs{state="stopping",service="orchestrator"} 0',
        'granule_runs{state="succeeded",service="orchestrator"} 1',
        'granule_runs{state="failed",service="orchestrator"} 1',
        'granule_runs{state="stopped",service="orchestrator"} 0',
        'granule_runs{state="refused",service="orchestrator"} 0',
        'granule_runs{state="expired",service="orchestrator"} 0',
        'granule_dispatch_to_start_seconds_sum{service="orchestrator"} 2',
        'granule_dispatch_to_start_seconds_count{service="orchestrator"} 1',
        'granule_event_log_appends_total{service="orchestrator"} 11',
        'granule_event_log_consumer_lag{consumer="granule-nats-outbox",service="orchestrator"} 0',
      ]);
    } finally {
      await outbox.stop();
      feed.stop();
    }
  });
});
