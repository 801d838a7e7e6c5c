import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { executionSubjects, type RunEventEntry } from '@granule/contracts';
import { createTestDatabase, EventStore, NatsOutboxPublisher, type TestDatabase } from '@granule/event-store';
import {
  connectNats,
  deleteExecutionStreams,
  ensureExecutionStreams,
  startPrivateNats,
  waitUntil,
  type PrivateServer,
} from '@granule/messaging';
import type { NatsSession } from '../connection/nats-session';
import { followRunEvents } from './follow-run';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The read spine end to end on a NATS of the test's own: the outbox publishes committed events
 * into the EVENTS stream, a watch follows a run there with an ordered consumer, and NATS is
 * stopped and started again (same store) in the middle while the run goes on.
 */
describe('followRunEvents on the EVENTS stream', () => {
  const prefix = `spine${randomBytes(4).toString('hex')}`;
  const subjects = executionSubjects(prefix);
  let nats: PrivateServer;
  let db: TestDatabase;
  let store: EventStore;
  let outboxNc: NatsConnection;
  let cliNc: NatsConnection;
  let outbox: NatsOutboxPublisher;
  /** Every `runs.events` / `runs.show` query the watch sends (nobody answers them here). */
  const queries: string[] = [];

  beforeAll(async () => {
    nats = await startPrivateNats();
    db = await createTestDatabase('follow_run');
    store = new EventStore(db.dataSource);
    outboxNc = await connectNats({ natsUrl: nats.url }, 'follow-run-outbox');
    cliNc = await connectNats({ natsUrl: nats.url }, 'follow-run-cli');
    await ensureExecutionStreams(outboxNc, prefix);
    cliNc.subscribe(`${prefix}.runs.>`, { callback: (_err, msg) => void queries.push(msg.subject) });
    outbox = new NatsOutboxPublisher(outboxNc, store, {
      subjectPrefix: `${prefix}.events`,
      pollIntervalMs: 50,
      batchSize: 3,
    });
    outbox.start();
  });

  beforeEach(() => void queries.splice(0));

  afterAll(async () => {
    await outbox?.stop();
    await deleteExecutionStreams(outboxNc, prefix).catch(() => undefined);
    await cliNc?.close();
    await outboxNc?.close();
    await db?.drop();
    await nats?.stop();
  });

  const session = (): NatsSession => ({ nc: cliNc, prefix, subjects, url: nats.url });
  const append = async (runId: string, from: number, types: string[]): Promise<void> => {
    for (const [i, type] of types.entries())
      await store.appendToStream(`run-${runId}`, [{ type, data: { n: from + i } }], {
        expectedVersion: from + i === 1 ? 'no_stream' : from + i - 1,
      });
  };
  const heldInStream = async (runId: string): Promise<number> => {
    const jsm = await jetstreamManager(outboxNc);
    const info = await jsm.streams.info(subjects.events.stream, { subjects_filter: subjects.events.forRun(runId) });
    return info.state.subjects?.[subjects.events.forRun(runId)] ?? 0;
  };

  const consumersOfEvents = async (): Promise<{ name: string; inactiveS: number }[]> => {
    const jsm = await jetstreamManager(outboxNc);
    return (await jsm.consumers.list(subjects.events.stream).next()).map((c) => ({
      name: c.name,
      inactiveS: (c.config.inactive_threshold ?? 0) / 1e9,
    }));
  };

  it('prints versions 1..N once each across a NATS restart, with events committed while NATS is down', async () => {
    const runId = `r-${randomBytes(3).toString('hex')}`;
    await append(runId, 1, ['DeploymentRequested', 'PlanAccepted', 'TaskDispatched']);
    await waitUntil(async () => (await heldInStream(runId)) === 3, 'the first events in the stream', 20_000);

    const printed: number[] = [];
    const follow = followRunEvents(
      session(),
      runId,
      (entry: RunEventEntry) => void printed.push(entry.version),
      () => undefined,
    );
    await waitUntil(() => printed.length === 3, 'the first three events printed', 20_000);
    // One consumer while it follows, which the server drops a minute after a follower that died.
    expect(await consumersOfEvents()).toEqual([{ name: expect.any(String), inactiveS: 60 }]);

    await nats.halt();
    // Committed while NATS is away: the outbox publishes them once it is back.
    await append(runId, 4, ['TaskSucceeded', 'TaskDispatched', 'TaskSucceeded', 'TaskDispatched']);
    await sleep(500);
    await nats.resume();
    await waitUntil(() => printed.length >= 7, 'the events committed during the outage', 20_000);
    await append(runId, 8, ['TaskSucceeded', 'DeploymentSucceeded']);
    await follow;

    expect(printed).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // Read from the stream alone: not one query to the orchestrators.
    expect(queries).toEqual([]);
    // The follow that ended left no consumer behind (the one recreated after the restart included).
    expect(await consumersOfEvents()).toEqual([]);
  }, 60_000);

  it('a run stopped and resumed is followed through its old stop to its end', async () => {
    const runId = `r-${randomBytes(3).toString('hex')}`;
    await append(runId, 1, ['DeploymentRequested', 'PlanAccepted', 'DeploymentStopRequested', 'DeploymentStopped']);
    await append(runId, 5, ['DeploymentResumed', 'TaskSucceeded']);
    await waitUntil(async () => (await heldInStream(runId)) === 6, 'the events so far in the stream', 20_000);
    const printed: string[] = [];
    const follow = followRunEvents(
      session(),
      runId,
      (entry: RunEventEntry) => void printed.push(`${entry.version} ${entry.event.type}`),
      () => undefined,
    );
    await waitUntil(() => printed.length === 6, 'the events up to the resumed run', 20_000);
    await append(runId, 7, ['DeploymentSucceeded']);
    await follow;
    expect(printed.map((p) => p.split(' ')[0])).toEqual(['1', '2', '3', '4', '5', '6', '7']);
    expect(printed.at(-1)).toBe('7 DeploymentSucceeded');
  }, 60_000);

  it('a phase run announced before it exists is followed from its first event', async () => {
    const runId = `r-${randomBytes(3).toString('hex')}`;
    const printed: string[] = [];
    const follow = followRunEvents(
      session(),
      runId,
      (entry: RunEventEntry) => void printed.push(`${entry.version} ${entry.event.type}`),
      () => undefined,
      { waitForRun: true },
    );
    // Recorded a moment after the watch began: its events come on the stream within the grace.
    await sleep(300);
    await append(runId, 1, ['DeploymentRequested', 'PlanAccepted', 'DeploymentFailed']);
    await follow;
    expect(printed).toEqual(['1 DeploymentRequested', '2 PlanAccepted', '3 DeploymentFailed']);
    // The stream had it all: nothing asked.
    expect(queries).toEqual([]);
  }, 60_000);

  it('a run whose events do not come within a second is asked for once; without an answer it is followed on', async () => {
    const runId = `r-${randomBytes(3).toString('hex')}`;
    const printed: number[] = [];
    const notices: string[] = [];
    const follow = followRunEvents(
      session(),
      runId,
      (entry: RunEventEntry) => void printed.push(entry.version),
      (line) => void notices.push(line),
      { waitForRun: true },
    );
    await waitUntil(() => queries.length > 0, 'the question to the log', 20_000);
    expect(queries).toEqual([subjects.runs.events]);
    await append(runId, 1, ['DeploymentRequested', 'DeploymentRefused']);
    await follow;
    expect(printed).toEqual([1, 2]);
    // Nobody answers here (the test's listener takes the question): the query timed out.
    expect(notices).toEqual([
      expect.stringMatching(/no orchestrator answers; following run r-\w+'s events as they are committed$/),
    ]);
  }, 60_000);
});
