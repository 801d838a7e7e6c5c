import { randomBytes } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  executionSubjects,
  isTerminalRunEvent,
  type RunLogsReply,
  type RunLogsRequest,
  type TaskLogLine,
  type TaskLogMessage,
} from '@granule/contracts';
import {
  createTestDatabase,
  EventStore,
  NatsOutboxPublisher,
  TaskLogStore,
  type TestDatabase,
} from '@granule/event-store';
import {
  connectNats,
  deleteExecutionStreams,
  ensureExecutionStreams,
  okReply,
  publishJson,
  startPrivateNats,
  type PrivateServer,
} from '@granule/messaging';
import { createLogger } from '@granule/service-kit';
// The real task-log writer of the orchestrators: it stores and then publishes on STORED_LOGS.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { OrchestratorConfig } from '../../../orchestrator/src/orchestrator.config';
// eslint-disable-next-line @nx/enforce-module-boundaries
import { TaskLogIntake } from '../../../orchestrator/src/logs/task-log-intake';
import type { NatsSession } from '../connection/nats-session';
import { readTaskLogs } from './logs.command';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * `granule logs --follow` on the read spine, on a NATS of the test's own: an agent's output goes
 * through LOGS to the real task-log writer, which stores it in PostgreSQL and publishes the
 * records on STORED_LOGS; the follower reads them there with an ordered consumer while NATS is
 * stopped and started again (same store) in the middle of the run.
 */
describe('granule logs --follow on the STORED_LOGS stream', () => {
  const prefix = `logspine${randomBytes(4).toString('hex')}`;
  const subjects = executionSubjects(prefix);
  let nats: PrivateServer;
  let db: TestDatabase;
  let events: EventStore;
  let logStore: TaskLogStore;
  let orchNc: NatsConnection;
  let agentNc: NatsConnection;
  let cliNc: NatsConnection;
  let outbox: NatsOutboxPublisher;
  let intake: TaskLogIntake;
  /** When each `runs.logs` question came (ms). */
  const asked: number[] = [];

  beforeAll(async () => {
    nats = await startPrivateNats();
    db = await createTestDatabase('logs_follow');
    events = new EventStore(db.dataSource);
    logStore = new TaskLogStore(db.dataSource);
    orchNc = await connectNats({ natsUrl: nats.url }, 'logs-follow-orchestrator');
    agentNc = await connectNats({ natsUrl: nats.url }, 'logs-follow-agent');
    cliNc = await connectNats({ natsUrl: nats.url }, 'logs-follow-cli');
    await ensureExecutionStreams(orchNc, prefix);
    outbox = new NatsOutboxPublisher(orchNc, events, { subjectPrefix: `${prefix}.events`, pollIntervalMs: 50 });
    outbox.start();
    const config = Object.assign(new OrchestratorConfig(), { subjectPrefix: prefix, taskLogLimitBytes: 65_536 });
    intake = new TaskLogIntake(orchNc, db.dataSource, config, createLogger('test', 'silent'));
    intake.onApplicationBootstrap();
    // `runs.logs` as the orchestrators answer it: records after `after`, ended when the run has
    // and LOGS holds none of its output.
    orchNc.subscribe(subjects.runs.logs, {
      callback: (_err, msg) => {
        asked.push(Date.now());
        void (async () => {
          const q = msg.json<RunLogsRequest>();
          const page = await logStore.read({
            runIds: [q.runId],
            ...(q.node ? { node: q.node } : {}),
            ...(q.stderrOnly ? { stderrOnly: true } : {}),
            ...(q.after ? { afterId: q.after } : {}),
            limit: 2,
          });
          const head = await events.streamHead(`run-${q.runId}`);
          const info = await (
            await jetstreamManager(orchNc)
          ).streams.info(subjects.logs.stream, { subjects_filter: subjects.logs.forRun(q.runId) });
          const waiting = Object.values(info.state.subjects ?? {}).some((n) => n > 0);
          const reply: RunLogsReply = {
            records: page.records,
            more: page.more,
            ended: !page.more && isTerminalRunEvent(head?.lastEventType) && !waiting,
            runIds: [q.runId],
            limitBytes: 65_536,
          };
          msg.respond(JSON.stringify(okReply(reply)));
        })();
      },
    });
  });

  afterAll(async () => {
    await intake?.onApplicationShutdown();
    await outbox?.stop();
    await deleteExecutionStreams(orchNc, prefix).catch(() => undefined);
    await cliNc?.close();
    await agentNc?.close();
    await orchNc?.close();
    await db?.drop();
    await nats?.stop();
  });

  const session = (): NatsSession => ({ nc: cliNc, prefix, subjects, url: nats.url });
  let version = 0;
  const record = async (runId: string, ...types: string[]): Promise<void> => {
    for (const type of types) {
      await events.appendToStream(`run-${runId}`, [{ type, data: {} }], {
        expectedVersion: version === 0 ? 'no_stream' : version,
      });
      version++;
    }
  };
  /** The agent's output message `seq` of node n1 (one line each). */
  const output = async (runId: string, seq: number, end = false): Promise<void> => {
    const message: TaskLogMessage = {
      runId,
      key: 'build@n1',
      node: 'n1',
      attempt: 1,
      try: 1,
      seq,
      chunks: [{ stream: seq % 3 === 2 ? 'stderr' : 'stdout', at: Date.now(), data: `line ${seq}\n` }],
      ...(end ? { end: true } : {}),
    };
    // Published again until JetStream takes it (it is back a moment after NATS restarts), as an agent does.
    for (let tries = 1; ; tries++) {
      try {
        await publishJson(jetstream(agentNc), subjects.logs.forTask(runId, 'n1'), message, `${runId}/${seq}`);
        return;
      } catch (err) {
        if (tries >= 40) throw err;
        await sleep(250);
      }
    }
  };
  const stored = async (runId: string): Promise<number> =>
    (await logStore.read({ runIds: [runId], limit: 1000 })).records.length;

  it('prints every record once, in order, across a NATS restart, asking runs.logs only to catch up and at the end', async () => {
    const runId = `r-${randomBytes(3).toString('hex')}`;
    version = 0;
    await record(runId, 'DeploymentRequested', 'PlanAccepted');
    for (let seq = 0; seq < 5; seq++) await output(runId, seq);
    await until('five records stored', async () => (await stored(runId)) === 5);

    const lines: TaskLogLine[] = [];
    const follow = readTaskLogs(
      session(),
      { runId },
      (line) => void lines.push(line),
      true,
      () => undefined,
    );
    // Five records in pages of two: three questions to catch up.
    await until('the stored records printed', () => lines.length === 5);
    const caughtUp = asked.length;
    expect(caughtUp).toBe(3);

    for (let seq = 5; seq < 9; seq++) await output(runId, seq);
    await until('the records stored after the catch-up printed', () => lines.length === 9);

    // Output on its way while NATS goes away; the writer stores and publishes it when it is back.
    for (let seq = 9; seq < 12; seq++) await output(runId, seq);
    await nats.halt();
    await sleep(700);
    await nats.resume();
    for (let seq = 12; seq < 15; seq++) await output(runId, seq, seq === 14);
    await until('fifteen records stored', async () => (await stored(runId)) === 15);
    await until('the records stored around the restart printed', () => lines.length === 15);
    const beforeEnd = asked.length;
    const endedAt = Date.now();
    await record(runId, 'DeploymentSucceeded');
    await follow;

    expect(lines.map((l) => `${l.stream} ${l.line}`)).toEqual(
      Array.from({ length: 15 }, (_, seq) => `${seq % 3 === 2 ? 'stderr' : 'stdout'} line ${seq}`),
    );
    // From the stream alone between the catch-up and the run's end: no question in between.
    expect(beforeEnd).toBe(caughtUp);
    // At the end one question: is all of its output stored?
    expect(asked.slice(beforeEnd).every((at) => at >= endedAt)).toBe(true);
    expect(asked.length - beforeEnd).toBe(1);
  }, 90_000);

  it('keeps --stderr-only and --node on streamed records', async () => {
    const runId = `r-${randomBytes(3).toString('hex')}`;
    version = 0;
    await record(runId, 'DeploymentRequested', 'PlanAccepted');
    const lines: TaskLogLine[] = [];
    const follow = readTaskLogs(
      session(),
      { runId, stderrOnly: true, node: 'n1' },
      (line) => void lines.push(line),
      true,
      () => undefined,
    );
    for (let seq = 0; seq < 6; seq++) await output(runId, seq, seq === 5);
    await until('six records stored', async () => (await stored(runId)) === 6);
    await record(runId, 'DeploymentFailed');
    await follow;
    expect(lines.map((l) => `${l.stream} ${l.line}`)).toEqual(['stderr line 2', 'stderr line 5']);
  }, 60_000);
});
