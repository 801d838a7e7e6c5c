import { randomBytes } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { executionSubjects, type StoredTaskLogMessage, type TaskLogMessage } from '@granule/contracts';
import { createTestDatabase, TaskLogStore, type TestDatabase } from '@granule/event-store';
import {
  connectTestNats,
  deleteExecutionStreams,
  ensureExecutionStreams,
  JetStreamConsumers,
  publishJson,
  waitUntil,
} from '@granule/messaging';
import { createLogger } from '@granule/service-kit';
import { OrchestratorConfig } from '../orchestrator.config';
import { TaskLogIntake } from './task-log-intake';

jest.setTimeout(30_000);

const message = (seq: number, text: string, node = 'n1'): TaskLogMessage => ({
  runId: 'r1',
  key: `build@${node}`,
  node,
  attempt: 1,
  try: 1,
  seq,
  chunks: [{ stream: 'stdout', at: Date.now(), data: text }],
});

describe('TaskLogIntake (real NATS and PostgreSQL)', () => {
  let db: TestDatabase;
  let nats: NatsConnection;
  const prefix = `test.logs${randomBytes(3).toString('hex')}`;
  const s = executionSubjects(prefix);

  beforeAll(async () => {
    db = await createTestDatabase('task_log_intake');
    nats = await connectTestNats('granule-task-log-intake-test');
    await ensureExecutionStreams(nats, prefix);
  });

  afterAll(async () => {
    await deleteExecutionStreams(nats, prefix).catch(() => undefined);
    await nats?.close();
    await db?.drop();
  });

  it('stores output sent while no orchestrator ran, once each, and only from the subject of its node', async () => {
    const js = jetstream(nats);
    // Agents publish while no orchestrator consumes: the stream keeps it.
    await publishJson(js, s.logs.forTask('r1', 'n1'), message(0, 'first\n'), 'm0');
    await publishJson(js, s.logs.forTask('r1', 'n1'), message(1, 'second\n'), 'm1');
    // The same message again under another id (a resend after a lost acknowledgement).
    await publishJson(js, s.logs.forTask('r1', 'n1'), message(1, 'second\n'), 'm1-again');
    // A host writing a log for another node on its own subject.
    await publishJson(js, s.logs.forTask('r1', 'n2'), message(2, 'forged\n', 'n1'), 'forged');

    const config = Object.assign(new OrchestratorConfig(), { subjectPrefix: prefix, taskLogLimitBytes: 65_536 });
    const logger = createLogger('test', 'silent');
    const consumers = new JetStreamConsumers(nats, logger);
    const store = new TaskLogStore(db.dataSource);
    const intake = new TaskLogIntake(nats, store, config, logger, consumers);
    await intake.onApplicationBootstrap();
    try {
      // Stored output leaves the work queue: once the stream is empty, everything was handled.
      await waitUntil(async () => {
        const info = await (await jetstreamManager(nats)).streams.info(s.logs.stream);
        return info.state.messages === 0;
      }, 'the stream to empty');
      const { records } = await store.read({ runIds: ['r1'], limit: 100 });
      expect(records.map((r) => r.data)).toEqual(['first\n', 'second\n']);
      // Each stored message is published once, with its record ids, on the run's stored-logs subject.
      const consumer = await jetstream(nats).consumers.get(s.storedLogs.stream, {
        filter_subjects: s.storedLogs.forRun('r1'),
      });
      const published: StoredTaskLogMessage[] = [];
      for (let m = await consumer.next({ expires: 2000 }); m; m = await consumer.next({ expires: 1000 })) {
        published.push(m.json<StoredTaskLogMessage>());
        expect(m.headers?.get('Nats-Msg-Id')).toBe(m.json<StoredTaskLogMessage>().records[0].id);
      }
      expect(published.flatMap((p) => p.records)).toEqual(records);
      expect(published.map((p) => p.runId)).toEqual(['r1', 'r1']);
    } finally {
      await intake.onModuleDestroy();
      await consumers.onModuleDestroy();
    }
  });
});
