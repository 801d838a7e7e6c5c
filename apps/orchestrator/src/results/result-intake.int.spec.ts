import { randomBytes } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { executionSubjects, type TaskProgressMessage } from '@granule/contracts';
import {
  connectTestNats,
  deleteExecutionStreams,
  ensureExecutionStreams,
  JetStreamConsumers,
  publishJson,
  waitUntil,
} from '@granule/messaging';
import type { RunCoordinator } from '@granule/run-coordination';
import { createLogger } from '@granule/service-kit';
import { OrchestratorConfig } from '../orchestrator.config';
import { ResultIntake } from './result-intake';

jest.setTimeout(30_000);

const result = (runId: string, node: string, key: string): TaskProgressMessage => ({
  runId,
  key: `${key}@${node}`,
  node,
  attempt: 1,
  dispatchId: `${runId}/${key}@${node}/1`,
  status: 'succeeded',
  at: new Date().toISOString(),
});

/**
 * The two things ResultIntake asks of the run coordinator: the runs driven here, and recording
 * a batch of results (failing the first `failures` times, as a database that is down).
 */
class RecordingRuns {
  owned: string[] = [];
  batches: TaskProgressMessage[][] = [];
  failures = 0;

  asCoordinator(): RunCoordinator {
    return {
      owned: () => this.owned,
      progressBatch: async (reports: TaskProgressMessage[]) => {
        if (this.failures > 0) {
          this.failures--;
          throw new Error('database is down');
        }
        this.batches.push(reports);
      },
    } as unknown as RunCoordinator;
  }

  get recorded(): string[] {
    return this.batches.flat().map((r) => `${r.runId}:${r.key}`);
  }
}

describe('ResultIntake (real NATS)', () => {
  let nats: NatsConnection;
  const prefix = `test.results${randomBytes(3).toString('hex')}`;
  const s = executionSubjects(prefix);
  let runs: RecordingRuns;
  let consumers: JetStreamConsumers;
  let intake: ResultIntake;

  beforeAll(async () => {
    nats = await connectTestNats('granule-result-intake-test');
    await ensureExecutionStreams(nats, prefix);
  });

  beforeEach(() => {
    const logger = createLogger('test', 'silent');
    runs = new RecordingRuns();
    consumers = new JetStreamConsumers(nats, logger);
    const config = Object.assign(new OrchestratorConfig(), { subjectPrefix: prefix });
    intake = new ResultIntake(config, runs.asCoordinator(), consumers, logger);
  });

  afterEach(async () => {
    await intake.onModuleDestroy();
    await consumers.onModuleDestroy();
  });

  afterAll(async () => {
    await deleteExecutionStreams(nats, prefix).catch(() => undefined);
    await nats?.close();
  });

  it("records a run's results from its first, in order, and drops forged and unreadable ones for good", async () => {
    const js = jetstream(nats);
    // Sent before the orchestrator drove the run: the feed starts from the run's first result.
    await publishJson(js, s.results.forTask('a', 'n1'), result('a', 'n1', 'one'), 'a1');
    await publishJson(js, s.results.forTask('a', 'n2'), result('a', 'n1', 'forged'), 'a-forged');
    await js.publish(s.results.forTask('a', 'n1'), 'not json');
    await publishJson(js, s.results.forTask('other', 'n1'), result('other', 'n1', 'elsewhere'), 'o1');
    runs.owned = ['a'];
    intake.sync();
    await waitUntil(() => runs.recorded.length === 1, 'the first result');
    await publishJson(js, s.results.forTask('a', 'n1'), result('a', 'n1', 'two'), 'a2');
    await publishJson(js, s.results.forTask('a', 'n2'), result('a', 'n2', 'three'), 'a3');
    await waitUntil(() => runs.recorded.length === 3, 'every result of run a');
    await new Promise((r) => setTimeout(r, 300));
    expect(runs.recorded).toEqual(['a:one@n1', 'a:two@n1', 'a:three@n2']);
    // Every message was settled: the recorded ones acknowledged, the forged and unreadable ones terminated.
    const consumers = await (await jetstreamManager(nats)).consumers.list(s.results.stream).next();
    const feed = consumers.find((c) => c.config.filter_subject === s.results.forRun('a'));
    expect(feed).toMatchObject({ num_ack_pending: 0, num_pending: 0, delivered: { stream_seq: 6 } });
  });

  it('hands back a batch it could not record; it comes again and is recorded once', async () => {
    const js = jetstream(nats);
    runs.failures = 1;
    await publishJson(js, s.results.forTask('b', 'n1'), result('b', 'n1', 'one'), 'b1');
    runs.owned = ['b'];
    intake.sync();
    await waitUntil(() => runs.recorded.length === 1, 'the result, recorded after a failure');
    expect(runs.failures).toBe(0);
    await new Promise((r) => setTimeout(r, 1500));
    expect(runs.recorded).toEqual(['b:one@n1']);
  });

  it('closes the feed of a run no longer driven here', async () => {
    const js = jetstream(nats);
    runs.owned = ['c'];
    intake.sync();
    await publishJson(js, s.results.forTask('c', 'n1'), result('c', 'n1', 'one'), 'c1');
    await waitUntil(() => runs.recorded.length === 1, 'the first result');
    runs.owned = [];
    intake.sync();
    await new Promise((r) => setTimeout(r, 200));
    await publishJson(js, s.results.forTask('c', 'n1'), result('c', 'n1', 'two'), 'c2');
    await new Promise((r) => setTimeout(r, 700));
    expect(runs.recorded).toEqual(['c:one@n1']);
  });
});
