import type { Command } from 'commander';
import { DeliverPolicy } from '@nats-io/jetstream';
import type { Subscription } from '@nats-io/transport-node';
import {
  TaskLogLineSplitter,
  type StoredTaskLogMessage,
  type TaskLogRecord,
  type RunLogsReply,
  type RunLogsRequest,
  type RunTasksReply,
  type RunTasksRequest,
  type TaskLogLine,
} from '@granule/contracts';
import { UsageError } from '@granule/core';
import { addConnectionOptions } from '../connection';
import { query, withNats, type NatsSession } from '../connection/nats-session';
import { openOrderedFeed, type OrderedFeed } from '../connection/ordered-feed';
import { helpExamples } from '../messages';
import { parseFormat, toJson, toYaml, writeOut } from '../output';
import { followRunEvents } from './follow-run';
import { jsonLogLine, renderTaskTable, TaskLogTextPrinter } from './task-log-format';

interface Conn {
  natsUrl?: string;
  subjectPrefix?: string;
  output: string;
}

/** A follower without the stream asks again at least this often (and soon after output or an event of the run shows up); one with it, this long after the run ended while output is still being stored. */
const FOLLOW_POLL_MS = 1000;
/** After a wake-up, time for the orchestrators to store what woke it. */
const FOLLOW_SETTLE_MS = 150;

function tryNumber(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9]\d{0,5}$/.test(value.trim()))
    throw new UsageError(`--attempt ${value}: expected a try number (1 for the first, 2 for the first retry, ...)`);
  return Number(value.trim());
}

function nonEmpty(flag: string, value: string | undefined): string | undefined {
  if (value !== undefined && value.trim() === '') throw new UsageError(`${flag}: expected a value, got nothing`);
  return value?.trim();
}

/** True when a streamed record is one `request` asks for (the filters `runs.logs` applies). */
function wanted(request: RunLogsRequest, record: TaskLogRecord): boolean {
  return (
    (request.node === undefined || record.node === request.node) &&
    (request.task === undefined || record.key.startsWith(`${request.task}@`)) &&
    (request.try === undefined || record.try === request.try) &&
    (!request.stderrOnly || record.stream !== 'stdout')
  );
}

/** Stored-output messages a follower asks STORED_LOGS for at a time. */
const FEED_BATCH = 256;

type FeedItem =
  | { kind: 'stored'; body: StoredTaskLogMessage }
  | { kind: 'phase'; runId: string }
  | { kind: 'ended' }
  | { kind: 'failed'; err: unknown };

/**
 * A run's stored task output as the STORED_LOGS stream delivers it (ADR 0033): one ordered
 * consumer per run (a strategy run's phase runs each), merged into one
 * queue with what the run's events say. The client recreates an ordered consumer from its last
 * delivered sequence after a disconnect or a NATS restart.
 */
class StoredLogFeed {
  private readonly items: FeedItem[] = [];
  private readonly consumers = new Map<string, OrderedFeed>();
  private wake?: () => void;

  private constructor(private readonly session: NatsSession) {}

  /** Undefined where the stream is missing (an orchestrator older than it) or this identity may not read it. */
  static async open(session: NatsSession, runId: string): Promise<StoredLogFeed | undefined> {
    const feed = new StoredLogFeed(session);
    try {
      await feed.add(runId, true);
      return feed;
    } catch {
      await feed.stop();
      return undefined;
    }
  }

  /**
   * Follows `runId`'s stored output. `fromNow` (the run opened before the first `runs.logs`
   * read): only what is published from now on, since the read returns everything committed
   * before it and a record is published after its commit. Otherwise (a phase run learned of
   * later) everything the stream holds of it.
   */
  async add(runId: string, fromNow = false): Promise<void> {
    if (this.consumers.has(runId)) return;
    const { storedLogs } = this.session.subjects;
    const feed = await openOrderedFeed(
      this.session.nc,
      storedLogs.stream,
      { filter_subjects: storedLogs.forRun(runId), ...(fromNow ? { deliver_policy: DeliverPolicy.New } : {}) },
      FEED_BATCH,
    );
    const { messages } = feed;
    this.consumers.set(runId, feed);
    void (async () => {
      try {
        for await (const m of messages) this.push({ kind: 'stored', body: m.json<StoredTaskLogMessage>() });
      } catch (err) {
        this.push({ kind: 'failed', err });
      }
    })();
  }

  push(item: FeedItem): void {
    this.items.push(item);
    this.wake?.();
  }

  /** The next item, or undefined after `waitMs` without one. */
  async next(waitMs?: number): Promise<FeedItem | undefined> {
    if (this.items.length === 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        if (waitMs !== undefined) timer = setTimeout(resolve, waitMs);
      });
      clearTimeout(timer);
      this.wake = undefined;
    }
    return this.items.shift();
  }

  /** Ends every consumer (each removed from the server, a second at most). */
  async stop(): Promise<void> {
    await Promise.all([...this.consumers.values()].map((feed) => feed.end()));
  }
}

/**
 * Prints a run's task logs, line by line, to `emit`: every stored record in order, then, with
 * `follow`, what comes until the run has ended and its output is all stored. The stored records
 * are read from the orchestrators once (`runs.logs`, in pages); a follower then reads the
 * records as they are stored from the STORED_LOGS stream (ADR 0033), a record id printed once,
 * and when the run's events say it ended asks `runs.logs` whether its output is all stored (and
 * for anything the stream missed). Where the stream cannot be read it asks `runs.logs` again
 * whenever output or events of the run show up on NATS (and every second).
 */
export async function readTaskLogs(
  session: NatsSession,
  request: RunLogsRequest,
  emit: (line: TaskLogLine) => void,
  follow: boolean,
  notice: (line: string) => void = (line) => void process.stderr.write(`${line}\n`),
): Promise<void> {
  const splitter = new TaskLogLineSplitter();
  const printed = new Set<string>();
  let after: string | undefined;
  const print = (record: TaskLogRecord): void => {
    if (printed.has(record.id)) return;
    printed.add(record.id);
    if (after === undefined || BigInt(record.id) > BigInt(after)) after = record.id;
    for (const line of splitter.push(record)) emit(line);
  };
  /** Every record stored after the last one printed, in pages. */
  const readStored = async (): Promise<RunLogsReply> => {
    for (;;) {
      const reply = await query<RunLogsRequest, RunLogsReply>(session, session.subjects.runs.logs, {
        ...request,
        ...(after ? { after } : {}),
      });
      for (const record of reply.records) print(record);
      if (!reply.more) return reply;
    }
  };
  // Opened before the first read: whatever is stored after it is in the stream.
  const feed = follow ? await StoredLogFeed.open(session, request.runId) : undefined;
  try {
    const reply = await readStored();
    if (follow && !reply.ended) {
      if (feed) await followStored(session, request, feed, reply, print, readStored, notice);
      else await pollStored(session, request, reply, readStored);
    }
  } finally {
    await feed?.stop();
  }
  for (const line of splitter.flush()) emit(line);
}

/** Follows STORED_LOGS until the run has ended and `runs.logs` says its output is all stored. */
async function followStored(
  session: NatsSession,
  request: RunLogsRequest,
  feed: StoredLogFeed,
  first: RunLogsReply,
  print: (record: TaskLogRecord) => void,
  readStored: () => Promise<RunLogsReply>,
  notice: (line: string) => void,
): Promise<void> {
  for (const runId of first.runIds) await feed.add(runId);
  // The run's events (the EVENTS stream): a strategy run's phase runs as they start, and its end.
  void followRunEvents(
    session,
    request.runId,
    ({ event }) => {
      if (event.type === 'StrategyPhaseStarted') feed.push({ kind: 'phase', runId: event.data.childRunId });
    },
    notice,
  ).then(
    () => feed.push({ kind: 'ended' }),
    (err: unknown) => feed.push({ kind: 'failed', err }),
  );
  let ended = false;
  for (;;) {
    const item = await feed.next(ended ? FOLLOW_POLL_MS : undefined);
    if (item?.kind === 'stored') {
      for (const record of item.body.records) if (wanted(request, record)) print(record);
      continue;
    }
    if (item?.kind === 'phase') {
      await feed.add(item.runId);
      continue;
    }
    if (item?.kind === 'failed') throw item.err;
    if (item?.kind === 'ended') ended = true;
    // The run ended (or its output went quiet for a second since): is all of it stored?
    if ((await readStored()).ended) return;
  }
}

/** The follow of an installation without STORED_LOGS: `runs.logs` again when the run's output or events show up, or every second. */
async function pollStored(
  session: NatsSession,
  request: RunLogsRequest,
  first: RunLogsReply,
  readStored: () => Promise<RunLogsReply>,
): Promise<void> {
  const subscriptions = new Map<string, Subscription>();
  let wake: (() => void) | undefined;
  const listen = (subject: string): void => {
    if (!subscriptions.has(subject))
      subscriptions.set(subject, session.nc.subscribe(subject, { callback: () => wake?.() }));
  };
  try {
    for (let reply = first; !reply.ended; reply = await readStored()) {
      listen(session.subjects.events.forRun(request.runId));
      for (const runId of reply.runIds) listen(session.subjects.logs.forRun(runId));
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, FOLLOW_POLL_MS);
        wake = () => {
          wake = undefined;
          clearTimeout(timer);
          setTimeout(resolve, FOLLOW_SETTLE_MS);
        };
      });
      wake = undefined;
    }
  } finally {
    for (const sub of subscriptions.values()) sub.unsubscribe();
  }
}

export function registerLogsCommand(program: Command): void {
  addConnectionOptions(
    program
      .command('logs')
      .argument('<RUN>', 'run id')
      .description(
        "print the output of a run's tasks: stdout and stderr of every try, in the order the agents read them",
      )
      .option('--node <UID>', "only this node's tasks")
      .option('--task <ID>', 'only this task (on every node, unless --node)')
      .option('--attempt <N>', 'only try N on the host (1 is the first; retries are 2, 3, ...)')
      .option('--stderr-only', 'only what the tasks wrote to stderr')
      .option('--follow', 'keep printing new output until the run ends')
      .option('--timestamps', 'put the time each line was read in front of it (text output)')
      .option(
        '-o, --output <FORMAT>',
        'text|json|yaml (json: one object per line; yaml: a list, an item per line)',
        'text',
      )
      .addHelpText(
        'after',
        helpExamples(
          'granule logs 20261122-101500-ab12',
          'granule logs 20261122-101500-ab12 --node node-1 --task install --attempt 2',
          'granule logs 20261122-101500-ab12 --follow --stderr-only',
          'granule logs 20261122-101500-ab12 -o json | jq -r .line',
        ),
      )
      .action(
        async (
          runId: string,
          opts: Conn & {
            node?: string;
            task?: string;
            attempt?: string;
            stderrOnly?: boolean;
            follow?: boolean;
            timestamps?: boolean;
          },
        ) => {
          const format = parseFormat(opts.output, ['text', 'json', 'yaml'] as const);
          const node = nonEmpty('--node', opts.node);
          const task = nonEmpty('--task', opts.task);
          const attempt = tryNumber(opts.attempt);
          const request: RunLogsRequest = {
            runId,
            ...(node ? { node } : {}),
            ...(task ? { task } : {}),
            ...(attempt ? { try: attempt } : {}),
            ...(opts.stderrOnly ? { stderrOnly: true } : {}),
          };
          const printer = new TaskLogTextPrinter(opts.timestamps ?? false);
          let pending = '';
          let lines = 0;
          const emit = (line: TaskLogLine): void => {
            lines++;
            pending +=
              format === 'json' ? jsonLogLine(line) : format === 'yaml' ? toYaml([line]) : printer.render(line);
          };
          // Printed as it comes, one write after another, and every write done before the CLI exits.
          let written = Promise.resolve();
          const flush = (): Promise<void> => {
            if (pending !== '') {
              const text = pending;
              pending = '';
              written = written.then(() => writeOut(text));
            }
            return written;
          };
          await withNats(opts, async (s) => {
            const flushing = setInterval(() => void flush(), 100);
            try {
              await readTaskLogs(s, request, emit, opts.follow ?? false);
            } finally {
              clearInterval(flushing);
            }
          });
          await flush();
          // Nothing printed is an answer, but a silent one looks like a typo went unnoticed.
          if (lines === 0) {
            const filters = [
              node ? `--node ${node}` : '',
              task ? `--task ${task}` : '',
              attempt ? `--attempt ${attempt}` : '',
              opts.stderrOnly ? '--stderr-only' : '',
            ].filter(Boolean);
            process.stderr.write(
              `no task output of run ${runId}${filters.length ? ` matches ${filters.join(' ')}` : ''} (granule runs tasks ${runId} lists its tasks and nodes)\n`,
            );
          }
        },
      ),
  );
}

/** `granule runs tasks RUN`: registered on the `runs` command. */
export function registerRunTasksCommand(runs: Command): void {
  addConnectionOptions(
    runs
      .command('tasks')
      .argument('<RUN>', 'run id')
      .description('list every task instance of a run with its status, tries, exit code, start, duration and node')
      .option('--node <UID>', "only this node's task instances")
      .option('--status <S>', 'only instances in this status (pending, running, succeeded, failed, dep_failed, ...)')
      .option('-o, --output <FORMAT>', 'table|json|yaml', 'table')
      .addHelpText(
        'after',
        helpExamples(
          'granule runs tasks 20261122-101500-ab12',
          'granule runs tasks 20261122-101500-ab12 --node node-1 --status failed -o json',
        ),
      )
      .action(async (runId: string, opts: Conn & { node?: string; status?: string }) => {
        const format = parseFormat(opts.output, ['table', 'json', 'yaml'] as const);
        const node = nonEmpty('--node', opts.node);
        const status = nonEmpty('--status', opts.status);
        await withNats(opts, async (s) => {
          const reply = await query<RunTasksRequest, RunTasksReply>(s, s.subjects.runs.tasks, {
            runId,
            ...(node ? { node } : {}),
            ...(status ? { status } : {}),
          });
          await writeOut(
            format === 'json' ? toJson(reply) : format === 'yaml' ? toYaml(reply) : renderTaskTable(reply),
          );
        });
      }),
  );
}
