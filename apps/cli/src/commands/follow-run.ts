import { GranuleError } from '@granule/core';
import { ServiceUnavailableError } from '@granule/messaging';
import { TERMINAL_RUN_EVENTS } from '@granule/contracts';
import { runUnknownMessage } from '@granule/run-events';
import type { RunEvent, RunEventEntry, RunEventsRequest } from '@granule/contracts';
import { query, ServiceError } from '../connection/nats-session';
import type { NatsSession } from '../connection/nats-session';
import { openOrderedFeed, type OrderedFeed } from '../connection/ordered-feed';
import { queuedDetail } from './run-format';

const ENDS: readonly string[] = TERMINAL_RUN_EVENTS;

/**
 * Whether the follow ends at `entry`: a terminal event with nothing after it. A run stopped and
 * resumed has events after its `DeploymentStopped`, which a follow from the start goes through.
 */
function endsFollow(entry: RunEventEntry, more: boolean): boolean {
  return ENDS.includes(entry.event.type) && !more;
}

/** How long a watch waits for an orchestrator to answer again (one restarting after a crash takes the run over within its lease time). */
export const WATCH_SILENCE_LIMIT_MS = 60_000;

/** How long a phase run announced by its strategy run may take to show up. */
const RUN_APPEAR_LIMIT_MS = 30_000;

/** How long a follow waits for a run's first event on the stream before it asks the log. */
const FIRST_EVENT_GRACE_MS = 1000;

/** Asks until an orchestrator answers, for up to `WATCH_SILENCE_LIMIT_MS` of silence; says once that it waits. */
export async function askPatiently<T>(
  ask: () => Promise<T>,
  print: (line: string) => void,
  pollMs: number,
): Promise<T> {
  let silentSince: number | undefined;
  for (;;) {
    try {
      return await ask();
    } catch (err) {
      if (!(err instanceof ServiceUnavailableError)) throw err;
      if (silentSince === undefined) {
        silentSince = Date.now();
        print(
          `${new Date().toISOString().slice(11, 19)}  no orchestrator answers; waiting up to ${WATCH_SILENCE_LIMIT_MS / 1000} s for one (the run is in the event log and goes on when one is back)`,
        );
      } else if (Date.now() - silentSince > WATCH_SILENCE_LIMIT_MS) throw err;
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }
}

/** The body the outbox publishes for each committed event (`PublishedEvent` of the event store). */
interface PublishedRunEvent {
  type: string;
  data: unknown;
  streamVersion: number;
  createdAt: string;
}

/**
 * An ordered consumer of the EVENTS stream filtered on the run's subject, from the stream's
 * start (ADR 0033). Undefined where the stream is not there (an orchestrator older than the
 * read spine) or this identity may not read it: the caller asks the orchestrators instead.
 */
async function openRunEventStream(session: NatsSession, runId: string): Promise<OrderedFeed | undefined> {
  try {
    return await openOrderedFeed(
      session.nc,
      session.subjects.events.stream,
      { filter_subjects: session.subjects.events.forRun(runId) },
      256,
    );
  } catch {
    return undefined;
  }
}

function entryOf(body: PublishedRunEvent): RunEventEntry {
  return {
    version: body.streamVersion,
    at: body.createdAt,
    event: { type: body.type, data: body.data } as RunEvent,
  };
}

/**
 * Calls `onEntry` for each of a run's events in version order, once each, as they are
 * committed, until one ends the run or `onEntry` returns true. Follows the EVENTS stream (the
 * read spine, ADR 0033); where the stream does not hold the run's first events (kept a day, or a
 * run older than the stream) it catches up from the event log (`runs.events`, asking patiently
 * while the orchestrators are away: `notice` says so) and follows the stream from there; where
 * it holds none and none comes within a second, it asks the log once. With `waitForRun`, a run that does not exist yet is waited for
 * up to 30 s (a strategy announces its phase run just before it creates it).
 */
export async function followRunEvents(
  session: NatsSession,
  runId: string,
  onEntry: (entry: RunEventEntry) => void | boolean | Promise<void | boolean>,
  notice: (line: string) => void,
  { pollMs = 300, waitForRun = false }: { pollMs?: number; waitForRun?: boolean } = {},
): Promise<void> {
  const stream = await openRunEventStream(session, runId);
  if (!stream) return pollRunEvents(session, runId, onEntry, notice, { pollMs, waitForRun });
  let last = 0;
  let known = false;
  /** True when the follow is over. `more`: events after this one are known to exist. */
  const deliver = async (entry: RunEventEntry, more: boolean): Promise<boolean> => {
    if (entry.version <= last) return false;
    last = entry.version;
    known = true;
    return (await onEntry(entry)) === true || endsFollow(entry, more);
  };
  /** `once`: one question, and an orchestrator's silence is no reason to stop following. */
  const catchUp = async (once = false): Promise<boolean> => {
    const ask = (): Promise<RunEventEntry[]> =>
      query<RunEventsRequest, RunEventEntry[]>(session, session.subjects.runs.events, { runId, after: last });
    let entries: RunEventEntry[];
    try {
      entries = once ? await ask() : await askPatiently(ask, notice, pollMs);
    } catch (err) {
      // Not recorded yet: its first event comes on the stream.
      if (err instanceof GranuleError && err.code === 'RUN_UNKNOWN' && waitForRun) return false;
      if (once && err instanceof ServiceUnavailableError) {
        notice(
          `${new Date().toISOString().slice(11, 19)}  no orchestrator answers; following run ${runId}'s events as they are committed`,
        );
        return false;
      }
      throw err;
    }
    for (const [i, entry] of entries.entries()) if (await deliver(entry, i < entries.length - 1)) return true;
    return false;
  };
  const { messages } = stream;
  let gaveUp = false;
  const appear =
    waitForRun && stream.held === 0
      ? setTimeout(() => {
          gaveUp = true;
          void messages.stop();
        }, RUN_APPEAR_LIMIT_MS)
      : undefined;
  const next = messages[Symbol.asyncIterator]();
  let coming = next.next();
  try {
    // None held: a run whose events are on their way (just recorded, the outbox publishes within
    // a moment), or one older than what the stream keeps: the log is asked only when nothing
    // comes within the grace.
    if (stream.held === 0) {
      let grace: NodeJS.Timeout | undefined;
      const first = await Promise.race([
        coming,
        new Promise<undefined>((resolve) => (grace = setTimeout(() => resolve(undefined), FIRST_EVENT_GRACE_MS))),
      ]);
      clearTimeout(grace);
      if (first === undefined && (await catchUp(true))) return;
    }
    for (;;) {
      const result = await coming;
      if (result.done) break;
      coming = next.next();
      clearTimeout(appear);
      const entry = entryOf(result.value.json<PublishedRunEvent>());
      // The stream lacks what came before (dropped by its limits): the log has it.
      if (entry.version > last + 1 && (await catchUp())) return;
      if (await deliver(entry, result.value.info.pending > 0)) return;
    }
    if (gaveUp && !known) throw new ServiceError('RUN_UNKNOWN', runUnknownMessage(runId));
  } finally {
    clearTimeout(appear);
    void next.return?.(undefined);
    await stream.end();
  }
}

/** The follow of an installation without the EVENTS stream: asks the orchestrators every `pollMs`. */
async function pollRunEvents(
  session: NatsSession,
  runId: string,
  onEntry: (entry: RunEventEntry) => void | boolean | Promise<void | boolean>,
  notice: (line: string) => void,
  { pollMs, waitForRun }: { pollMs: number; waitForRun: boolean },
): Promise<void> {
  let after = 0;
  for (let waited = 0; ;) {
    let entries: RunEventEntry[];
    try {
      entries = await askPatiently(
        () => query<RunEventsRequest, RunEventEntry[]>(session, session.subjects.runs.events, { runId, after }),
        notice,
        pollMs,
      );
    } catch (err) {
      if (!(err instanceof GranuleError && err.code === 'RUN_UNKNOWN' && waitForRun && (waited += pollMs) < 30_000))
        throw err;
      await new Promise((r) => setTimeout(r, pollMs));
      continue;
    }
    for (const entry of entries) {
      after = entry.version;
      if ((await onEntry(entry)) === true) return;
    }
    const lastEntry = entries.at(-1);
    if (lastEntry && endsFollow(lastEntry, false)) return;
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** After this long without a plan, `waitUntilPlanned` says once what it waits for. */
const PLAN_WAIT_NOTICE_MS = 2000;

/**
 * Waits until a just-requested run is past planning: any event after DeploymentRequested (a
 * PlanAccepted, a strategy's first step, an end), following its events as a watch does.
 * Returns the refusal when the run was refused.
 */
export async function waitUntilPlanned(
  session: NatsSession,
  runId: string,
  print: (line: string) => void,
  pollMs = 100,
): Promise<{ code: string; reason: string } | undefined> {
  let refusal: { code: string; reason: string } | undefined;
  const told = setTimeout(
    () =>
      print(
        `${new Date().toISOString().slice(11, 19)}  run ${runId} is recorded and waits for its plan (graph-planner)`,
      ),
    PLAN_WAIT_NOTICE_MS,
  );
  try {
    await followRunEvents(
      session,
      runId,
      ({ event }) => {
        if (event.type === 'DeploymentRequested') return false;
        if (event.type === 'DeploymentRefused') refusal = { code: event.data.code, reason: event.data.reason };
        if (event.type === 'DeploymentQueued')
          print(
            `${new Date().toISOString().slice(11, 19)}  run ${runId} is queued: ${queuedDetail(event.data.heldBy)}`,
          );
        return true;
      },
      print,
      { pollMs, waitForRun: true },
    );
  } finally {
    clearTimeout(told);
  }
  return refusal;
}
