import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { GranuleError } from '@granule/core';
import { executionSubjects, isTerminalRunEvent, phaseAfterEvent } from '@granule/contracts';
import type {
  ExpiredCommandEntry,
  RunEventEntry,
  RunEventsRequest,
  RunListEntry,
  RunLogsReply,
  RunLogsRequest,
  RunShowRequest,
  RunSummary,
  RunTasksReply,
  RunTasksRequest,
  RunsListRequest,
  TaskLogRecord,
} from '@granule/contracts';
import { request, SERVICES, ServiceUnavailableError } from '@granule/messaging';
import { eventStreamId } from './run-stream-ids';

/** A run event as the events stream sends it: which run (a phase run's for a strategy run) and its stream id. */
export interface StreamedRunEvent extends RunEventEntry {
  runId: string;
}

export interface FollowTiming {
  /** Longest wait between two queries when no live message wakes the follower. */
  pollMs: number;
  /** How long an orchestrator may stay silent before the stream gives up. */
  silenceLimitMs: number;
  /** How long a phase run a strategy announced may take to appear. */
  phaseRunWaitMs: number;
}

export const FOLLOW_TIMING: FollowTiming = { pollMs: 1000, silenceLimitMs: 60_000, phaseRunWaitMs: 30_000 };

/**
 * Wakes a follower when a message arrives on any of its subjects (core NATS). Only a signal: what
 * is sent comes from the queries, so a message lost or seen before its write is stored costs at
 * most one poll interval, never a gap.
 */
class Wakeup {
  private readonly subs = new Map<string, Subscription>();
  private woken = false;
  private pending?: () => void;

  constructor(private readonly nc: NatsConnection) {}

  listen(subject: string): void {
    if (this.subs.has(subject)) return;
    this.subs.set(
      subject,
      this.nc.subscribe(subject, {
        callback: () => {
          this.woken = true;
          this.pending?.();
        },
      }),
    );
  }

  /** Resolves on a message since the last wait, after `ms`, or when `signal` aborts. */
  async wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.woken || signal.aborted) {
      this.woken = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.pending = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done);
      this.pending = done;
    });
    this.woken = false;
  }

  close(): void {
    for (const sub of this.subs.values()) sub.unsubscribe();
    this.subs.clear();
    this.pending?.();
  }
}

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });

/** The stream was closed by its client: stop following, quietly. */
class Aborted extends Error {}

/**
 * config-store's client of the orchestrators' run queries (`<prefix>.runs.*`, ADR 0032): one
 * request each for the HTTP API's reads, and the followers behind its Server-Sent Event streams.
 */
export class RunsGateway {
  private readonly subjects;

  constructor(
    private readonly nc: NatsConnection,
    prefix: string,
    private readonly timing: FollowTiming = FOLLOW_TIMING,
  ) {
    this.subjects = executionSubjects(prefix);
  }

  private ask<Q, R>(subject: string, q: Q): Promise<R> {
    return request<R>(this.nc, SERVICES.orchestrator, subject, q);
  }

  list(q: RunsListRequest): Promise<RunListEntry[]> {
    return this.ask(this.subjects.runs.list, q);
  }

  show(q: RunShowRequest): Promise<RunSummary> {
    return this.ask(this.subjects.runs.show, q);
  }

  events(q: Omit<RunEventsRequest, 'expiredCommands'>): Promise<RunEventEntry[]> {
    return this.ask(this.subjects.runs.events, q);
  }

  /** All of a run's events, and the stops and resumes that named it and expired, by time. */
  eventsAndExpiredCommands(runId: string): Promise<(RunEventEntry | ExpiredCommandEntry)[]> {
    return this.ask(this.subjects.runs.events, { runId, expiredCommands: true } satisfies RunEventsRequest);
  }

  tasks(q: RunTasksRequest): Promise<RunTasksReply> {
    return this.ask(this.subjects.runs.tasks, q);
  }

  logs(q: RunLogsRequest): Promise<RunLogsReply> {
    return this.ask(this.subjects.runs.logs, q);
  }

  /** Asks until an orchestrator answers, for up to `silenceLimitMs` of silence (one taking a run over after a crash). */
  private async patiently<R>(ask: () => Promise<R>, signal: AbortSignal): Promise<R> {
    let silentSince: number | undefined;
    for (;;) {
      if (signal.aborted) throw new Aborted();
      try {
        return await ask();
      } catch (err) {
        if (!(err instanceof ServiceUnavailableError)) throw err;
        silentSince ??= Date.now();
        if (Date.now() - silentSince > this.timing.silenceLimitMs) throw err;
        await sleep(this.timing.pollMs, signal);
      }
    }
  }

  /**
   * Sends a run's events in order from after `resume` (an events stream id's versions, `[]` from
   * the start) until the run has ended (its last event is terminal), and returns its phase then; undefined when `signal`
   * aborted first. A strategy run's phase runs are followed where they start, as `granule watch`
   * does: their events come after the `StrategyPhaseStarted` that names them, with ids under its
   * version. The live subject of each run followed wakes the follower; the query is what is sent.
   */
  async followEvents(
    runId: string,
    resume: readonly number[],
    send: (id: string, entry: StreamedRunEvent) => Promise<void>,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    try {
      const last = await this.followRun(runId, resume, [], send, signal, false);
      return phaseAfterEvent(last);
    } catch (err) {
      if (err instanceof Aborted) return undefined;
      throw err;
    }
  }

  /** Follows one run; returns the type of the event that ended it. */
  private async followRun(
    runId: string,
    resume: readonly number[],
    above: readonly number[],
    send: (id: string, entry: StreamedRunEvent) => Promise<void>,
    signal: AbortSignal,
    isPhase: boolean,
  ): Promise<string> {
    const wakeup = new Wakeup(this.nc);
    wakeup.listen(this.subjects.events.forRun(runId));
    try {
      let after = resume[0] ?? 0;
      let last: string | undefined;
      if (after > 0) {
        // Resuming at an event: if it started a phase run, that run's rest comes first.
        const [at] = await this.patiently(() => this.events({ runId, after: after - 1, upTo: after }), signal);
        if (at?.event.type === 'StrategyPhaseStarted')
          await this.followRun(at.event.data.childRunId, resume.slice(1), [...above, after], send, signal, true);
        last = at?.event.type;
      }
      let waited = 0;
      for (;;) {
        let entries: RunEventEntry[];
        try {
          entries = await this.patiently(() => this.events({ runId, after }), signal);
        } catch (err) {
          // A strategy announces its phase run just before it creates it.
          const unknown = err instanceof GranuleError && err.code === 'RUN_UNKNOWN';
          if (!(isPhase && unknown && (waited += this.timing.pollMs) < this.timing.phaseRunWaitMs)) throw err;
          await sleep(this.timing.pollMs, signal);
          continue;
        }
        for (const entry of entries) {
          if (signal.aborted) throw new Aborted();
          await send(eventStreamId([...above, entry.version]), { runId, ...entry });
          after = entry.version;
          last = entry.event.type;
          if (entry.event.type === 'StrategyPhaseStarted')
            await this.followRun(entry.event.data.childRunId, [], [...above, entry.version], send, signal, true);
        }
        // Ended now: its last event is terminal (a stopped run resumed later goes on after its stop).
        if (isTerminalRunEvent(last)) return last;
        await wakeup.wait(this.timing.pollMs, signal);
        if (signal.aborted) throw new Aborted();
      }
    } finally {
      wakeup.close();
    }
  }

  /**
   * Sends a run's task log records (a strategy run's: its phase runs') in order from after
   * `q.after` until the run has ended and every record is sent; true then, false when `signal`
   * aborted first. The log subjects of the runs read, and their event subjects (the end), wake it.
   */
  async followLogs(
    q: RunLogsRequest,
    send: (record: TaskLogRecord) => Promise<void>,
    signal: AbortSignal,
  ): Promise<boolean> {
    const wakeup = new Wakeup(this.nc);
    const watch = (runId: string): void => {
      wakeup.listen(this.subjects.logs.forRun(runId));
      wakeup.listen(this.subjects.events.forRun(runId));
    };
    watch(q.runId);
    let after = q.after;
    try {
      for (;;) {
        const reply = await this.patiently(() => this.logs({ ...q, ...(after ? { after } : {}) }), signal);
        for (const record of reply.records) {
          if (signal.aborted) return false;
          await send(record);
          after = record.id;
        }
        reply.runIds.forEach(watch);
        if (reply.more) continue;
        if (reply.ended) return true;
        await wakeup.wait(this.timing.pollMs, signal);
        if (signal.aborted) return false;
      }
    } catch (err) {
      if (err instanceof Aborted) return false;
      throw err;
    } finally {
      wakeup.close();
    }
  }
}
