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
  JetStreamConsumers,
  okReply,
  publishJson,
  startPrivateNats,
  waitUntil,
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
    const logger = createLogger('test', 'silent');
    intake = new TaskLogIntake(orchNc, logStore, config, logger, new JetStreamConsumers(orchNc, logger));
    await intake.onApplicationBootstrap();
    // `runs.logs` as the orchestrators answer it: records after `after`, ended when the run has
    // and LOGS holds none of its output.
    orchNc.subscribe(subjects.runs.logs, {
      callback: (_err, msg) => {
        asked.push(Date.now());
        void (async () => {
          const q = msg.json<RunLogsRequest>();
          // A strategy run answers for its phase runs.
          const phases = (await events.readStream(`run-${q.runId}`)).flatMap((e) =>
            e.type === 'StrategyPhaseStarted' ? [(e.data as { childRunId: string }).childRunId] : [],
          );
          const runIds = phases.length > 0 ? phases : [q.runId];
          const page = await logStore.read({
            runIds,
            ...(q.node ? { node: q.node } : {}),
            ...(q.stderrOnly ? { stderrOnly: true } : {}),
            ...(q.after ? { afterId: q.after } : {}),
            limit: 2,
          });
          const head = await events.streamHead(`run-${q.runId}`);
          let waiting = false;
          for (const runId of runIds) {
            const info = await (
              await jetstreamManager(orchNc)
            ).streams.info(subjects.logs.stream, { subjects_filter: subjects.logs.forRun(runId) });
            waiting ||= Object.values(info.state.subjects ?? {}).some((n) => n > 0);
          }
          const reply: RunLogsReply = {
            records: page.records,
            more: page.more,
            ended: !page.more && isTerminalRunEvent(head?.lastEventType) && !waiting,
            runIds,
            limitBytes: 65_536,
          };
          msg.respond(JSON.stringify(okReply(reply)));
        })();
      },
    });
  });

  afterAll(async () => {
    await intake?.onModuleDestroy();
    await outbox?.stop();
    await deleteExecutionStreams(orchNc, prefix).catch(() => undefined);
    await cliNc?.close();
    await agentNc?.close();
    await orchNc?.close();
    await db?.drop();
    await nats?.stop();
  });

  const session = (): NatsSession => ({ nc: cliNc, prefix, subjects, url: nats.url });
  const versions = new Map<string, number>();
  const recordWith = async (runId: string, type: string, data: object): Promise<void> => {
    const version = versions.get(runId) ?? 0;
    await events.appendToStream(`run-${runId}`, [{ type, data }], {
      expectedVersion: version === 0 ? 'no_stream' : version,
    });
    versions.set(runId, version + 1);
  };
  const record = async (runId: string, ...types: string[]): Promise<void> => {
    for (const type of types) await recordWith(runId, type, {});
  };
  /** The agent's output message `seq` of node n1 (one line each). */
  const output = async (runId: string, seq: number, end = false, text = `line ${seq}`): Promise<void> => {
    const message: TaskLogMessage = {
      runId,
      key: 'build@n1',
      node: 'n1',
      attempt: 1,
      try: 1,
      seq,
      chunks: [{ stream: seq % 3 === 2 ? 'stderr' : 'stdout', at: Date.now(), data: `${text}\n` }],
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
    await record(runId, 'DeploymentRequested', 'PlanAccepted');
    for (let seq = 0; seq < 5; seq++) await output(runId, seq);
    await waitUntil(async () => (await stored(runId)) === 5, 'five records stored', 30_000);

    const lines: TaskLogLine[] = [];
    const follow = readTaskLogs(
      session(),
      { runId },
      (line) => void lines.push(line),
      true,
      () => undefined,
    );
    // Five records in pages of two: three questions to catch up.
    await waitUntil(() => lines.length === 5, 'the stored records printed', 30_000);
    const caughtUp = asked.length;
    expect(caughtUp).toBe(3);

    for (let seq = 5; seq < 9; seq++) await output(runId, seq);
    await waitUntil(() => lines.length === 9, 'the records stored after the catch-up printed', 30_000);

    // Output on its way while NATS goes away; the writer stores and publishes it when it is back.
    for (let seq = 9; seq < 12; seq++) await output(runId, seq);
    await nats.halt();
    await sleep(700);
    await nats.resume();
    for (let seq = 12; seq < 15; seq++) await output(runId, seq, seq === 14);
    await waitUntil(async () => (await stored(runId)) === 15, 'fifteen records stored', 30_000);
    await waitUntil(() => lines.length === 15, 'the records stored around the restart printed', 30_000);
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
    // The follow that ended left no consumer behind on either stream it read.
    const jsm = await jetstreamManager(orchNc);
    const left = async (stream: string) => (await jsm.consumers.list(stream).next()).map((c) => c.name);
    expect([await left(subjects.events.stream), await left(subjects.storedLogs.stream)]).toEqual([[], []]);
  }, 90_000);

  it('keeps --stderr-only and --node on streamed records', async () => {
    const runId = `r-${randomBytes(3).toString('hex')}`;
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
    await waitUntil(async () => (await stored(runId)) === 6, 'six records stored', 30_000);
    await record(runId, 'DeploymentFailed');
    await follow;
    expect(lines.map((l) => `${l.stream} ${l.line}`)).toEqual(['stderr line 2', 'stderr line 5']);
  }, 60_000);

  it("follows a strategy run's phase runs, the ones started before the follow and after it", async () => {
    const parent = `s-${randomBytes(3).toString('hex')}`;
    const [first, second] = [`${parent}-p1`, `${parent}-p2`];
    const phase = (childRunId: string) => ({
      group: 'g',
      phase: 'deploy',
      nodes: ['n1'],
      childRunId,
      graph: 'default',
    });
    await record(parent, 'DeploymentRequested');
    await recordWith(parent, 'StrategyPhaseStarted', phase(first));
    await record(first, 'DeploymentRequested', 'PlanAccepted');
    await output(first, 0, false, 'first phase 0');
    await waitUntil(async () => (await stored(first)) === 1, 'the first phase output stored', 30_000);

    const lines: TaskLogLine[] = [];
    const follow = readTaskLogs(
      session(),
      { runId: parent },
      (line) => void lines.push(line),
      true,
      () => undefined,
    );
    await waitUntil(() => lines.length === 1, 'the first phase output printed', 30_000);
    await output(first, 1, true, 'first phase 1');
    await record(first, 'DeploymentSucceeded');
    await recordWith(parent, 'StrategyPhaseStarted', phase(second));
    await record(second, 'DeploymentRequested', 'PlanAccepted');
    await output(second, 0, true, 'second phase 0');
    await waitUntil(() => lines.length === 3, 'the second phase output printed', 30_000);
    await record(second, 'DeploymentSucceeded');
    await record(parent, 'DeploymentSucceeded');
    await follow;
    expect(lines.map((l) => l.line)).toEqual(['first phase 0', 'first phase 1', 'second phase 0']);
  }, 60_000);
});
