import type { Command } from 'commander';
import type { Subscription } from '@nats-io/transport-node';
import {
  TaskLogLineSplitter,
  type RunLogsReply,
  type RunLogsRequest,
  type RunTasksReply,
  type RunTasksRequest,
  type TaskLogLine,
} from '@granule/contracts';
import { UsageError } from '@granule/core';
import { addConnectionOptions } from '../connection';
import { query, withNats, type NatsSession } from '../connection/nats-session';
import { helpExamples } from '../messages';
import { parseFormat, toJson, toYaml, writeOut } from '../output';
import { jsonLogLine, renderTaskTable, TaskLogTextPrinter } from './task-log-format';

interface Conn {
  natsUrl?: string;
  subjectPrefix?: string;
  output: string;
}

/** A follower asks again at least this often, and soon after output or an event of the run shows up. */
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

/**
 * Prints a run's task logs, line by line, to `emit`: every stored record in order, then, with
 * `follow`, what comes until the run has ended and its output is all stored. Records are read
 * from the orchestrators (`runs.logs`); while following, output and events of the run on NATS
 * only say when to read again, so nothing is missed or printed twice.
 */
export async function readTaskLogs(
  session: NatsSession,
  request: RunLogsRequest,
  emit: (line: TaskLogLine) => void,
  follow: boolean,
): Promise<void> {
  const splitter = new TaskLogLineSplitter();
  const subscriptions = new Map<string, Subscription>();
  let after: string | undefined;
  let wake: (() => void) | undefined;
  const listen = (subject: string): void => {
    if (!subscriptions.has(subject))
      subscriptions.set(subject, session.nc.subscribe(subject, { callback: () => wake?.() }));
  };
  try {
    for (;;) {
      const reply = await query<RunLogsRequest, RunLogsReply>(session, session.subjects.runs.logs, {
        ...request,
        ...(after ? { after } : {}),
      });
      for (const record of reply.records) {
        for (const line of splitter.push(record)) emit(line);
        after = record.id;
      }
      if (reply.more) continue;
      if (!follow || reply.ended) break;
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
  for (const line of splitter.flush()) emit(line);
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
          const emit = (line: TaskLogLine): void => {
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
