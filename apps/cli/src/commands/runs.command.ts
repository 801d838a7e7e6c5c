import { Option, type Command } from 'commander';
import type {
  ExpiredCommandEntry,
  RunEventEntry,
  RunEventsRequest,
  RunListEntry,
  RunShowRequest,
  RunsListRequest,
  RunSummary,
} from '@granule/contracts';
import { UsageError } from '@granule/core';
import { RUN_PHASES } from '@granule/run-events';
import { RUNS_LIST_MAX } from '@granule/contracts';
import { maskSealed } from '@granule/task-model';
import { addConnectionOptions } from '../connection';
import {
  addCommandTtlOption,
  checkRunIdOption,
  commandTtl,
  newCommandId,
  newRunId,
  query,
  sendCommand,
  ServiceError,
  withNats,
} from '../connection/nats-session';
import { parseTimePoint } from '../durations';
import { helpExamples } from '../messages';
import { parseFormat, toJson, toTable, toYaml, writeOut } from '../output';
import { followRunEvents, waitUntilPlanned, watchRun, watchWithProgress } from './deploy.command';
import { registerRunTasksCommand } from './logs.command';
import { describeEvent, queuedDetail, renderRecap, runKindSuffix } from './run-format';
import { writeCheckRecap } from './check-recap';

interface Conn {
  natsUrl?: string;
  subjectPrefix?: string;
  output: string;
}

const FORMATS = ['table', 'json', 'yaml'] as const;

function listLimit(value: string): number {
  const n = /^\d+$/.test(value.trim()) ? Number(value.trim()) : NaN;
  if (!(n >= 1 && n <= RUNS_LIST_MAX))
    throw new UsageError(`--limit ${value}: expected a whole number from 1 to ${RUNS_LIST_MAX}`);
  return n;
}

/** `--status failed,stopped`: phases checked here, so a typo is a usage error, not an empty list. */
function runPhases(value: string): string[] {
  const phases = value
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const unknown = phases.filter((p) => !(RUN_PHASES as readonly string[]).includes(p));
  if (phases.length === 0 || unknown.length > 0)
    throw new UsageError(`--status ${value}: expected phases among ${RUN_PHASES.join(', ')}`);
  return phases;
}

function atVersion(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9]\d*$/.test(value)) throw new UsageError(`--at ${value}: expected an event number (1, 2, ...)`);
  return Number(value);
}

async function print<T>(format: string, data: T, table: () => string): Promise<void> {
  // A strategy run's events keep its inline inputs, sealed: shown as *** (ADR 0023).
  const shown = maskSealed(data);
  await writeOut(format === 'json' ? toJson(shown) : format === 'yaml' ? toYaml(shown) : table());
}

export function registerRunsCommands(program: Command): void {
  const runs = program.command('runs').description('deployment run history from the event log');

  addConnectionOptions(
    runs
      .command('list')
      .description('list the latest runs, newest first')
      .option('--limit <N>', 'how many', '50')
      .option('--env <ENV>', 'runs of this environment (as the deploy named it)')
      .option('--status <S,...>', `runs in these phases: ${RUN_PHASES.join(', ')}`)
      .option('--since <WHEN>', 'runs started since: a duration back (30m, 2h, 7d) or a date (2026-11-25)')
      .option('--until <WHEN>', 'runs started before: a duration back or a date')
      .option('-o, --output <FORMAT>', 'table|json|yaml', 'table')
      .addHelpText(
        'after',
        helpExamples('granule runs list --limit 10', 'granule runs list --env prod --status failed,stopped --since 7d'),
      )
      .action(async (opts: Conn & { limit: string; env?: string; status?: string; since?: string; until?: string }) => {
        const format = parseFormat(opts.output, FORMATS);
        const request: RunsListRequest = { limit: listLimit(opts.limit) };
        if (opts.env !== undefined) request.envId = opts.env;
        if (opts.status !== undefined) request.phases = runPhases(opts.status);
        if (opts.since !== undefined) request.since = parseTimePoint(opts.since, '--since').toISOString();
        if (opts.until !== undefined) request.until = parseTimePoint(opts.until, '--until').toISOString();
        await withNats(opts, async (s) => {
          const list = await query<RunsListRequest, RunListEntry[]>(s, s.subjects.runs.list, request);
          await print(format, list, () =>
            toTable(
              list.map((r) => ({
                run: r.runId,
                phase: r.phase,
                events: r.events,
                env: r.envId ?? '(inline)',
                graph: `${r.graph ?? ''}${runKindSuffix(r)}`,
                started: r.startedAt,
                updated: r.updatedAt,
              })),
            ),
          );
        });
      }),
  );

  addConnectionOptions(
    runs
      .command('show')
      .argument('<RUN>', 'run id')
      .description("show a run's state and recap; with --at N, as it was after event N (time travel)")
      .option('--at <N>', 'the state after event N')
      .option('--diff', 'a check run (deploy --check): show the difference each task would make')
      .option('-o, --output <FORMAT>', 'table|json|yaml', 'table')
      .addHelpText(
        'after',
        '\nExamples:\n  granule runs show 20261122-101500-ab12\n  granule runs show 20261122-101500-ab12 --at 7 -o json\n',
      )
      .action(async (runId: string, opts: Conn & { at?: string; diff?: boolean }) => {
        const format = parseFormat(opts.output, FORMATS);
        const at = atVersion(opts.at);
        await withNats(opts, async (s) => {
          const summary = await query<RunShowRequest, RunSummary>(s, s.subjects.runs.show, {
            runId,
            ...(at ? { at } : {}),
          });
          // A check run: what it found, task by task (ADR 0031).
          if (summary.check) {
            await writeCheckRecap(s, summary, format === 'table' ? 'text' : format, !!opts.diff);
            return;
          }
          await print(
            format,
            summary,
            () => `${renderRecap(summary)}${summary.running.length ? `running: ${summary.running.join(', ')}\n` : ''}`,
          );
        });
      }),
  );

  registerRunTasksCommand(runs);

  addConnectionOptions(
    runs
      .command('events')
      .argument('<RUN>', 'run id')
      .description("print a run's events; --follow keeps printing until the run ends; --at N stops at event N")
      .option('--follow', 'wait for new events until the run ends')
      .addOption(new Option('--at <N>', 'print events 1..N only').conflicts('follow'))
      .option('-o, --output <FORMAT>', 'table|json|yaml', 'table')
      .addHelpText(
        'after',
        '\nExamples:\n  granule runs events 20261122-101500-ab12 --follow\n  granule runs events 20261122-101500-ab12 --at 5 -o json\n',
      )
      .action(async (runId: string, opts: Conn & { follow?: boolean; at?: string }) => {
        const format = parseFormat(opts.output, FORMATS);
        const at = atVersion(opts.at);
        await withNats(opts, async (s) => {
          if (opts.follow && format === 'table') {
            await watchRun(s, runId, (line) => process.stdout.write(`${line}\n`));
            return;
          }
          if (opts.follow) {
            // One JSON object per line (json) or one YAML document per event (yaml), as they come.
            await followRunEvents(
              s,
              runId,
              async (entry) => {
                const shown = maskSealed(entry);
                await writeOut(format === 'json' ? `${JSON.stringify(shown)}\n` : `---\n${toYaml(shown)}`);
              },
              (line) => process.stderr.write(`${line}\n`),
            );
            return;
          }
          // Without --at, the stops and resumes that named the run and expired are shown among its events.
          const events = await query<RunEventsRequest, (RunEventEntry | ExpiredCommandEntry)[]>(
            s,
            s.subjects.runs.events,
            { runId, ...(at ? { upTo: at } : { expiredCommands: true }) },
          );
          await print(format, events, () => `${events.map(describeEvent).join('\n')}\n`);
        });
      }),
  );

  const control = (name: 'stop' | 'resume', summary: string, type: 'StopDeployment' | 'ResumeDeployment'): void => {
    const base = addCommandTtlOption(program.command(name));
    if (name === 'resume')
      base.option(
        '--wait',
        'when another running deployment took a node of this run meanwhile, queue behind it instead of being refused',
      );
    addConnectionOptions(
      base
        .argument('<RUN>', 'run id')
        .summary(summary)
        .option('-o, --output <FORMAT>', 'text|json|yaml', 'text')
        .addHelpText(
          'after',
          `\nExample:\n  granule ${name} 20261122-101500-ab12\n${name === 'resume' ? '  granule resume 20261122-101500-ab12 --wait\n' : ''}`,
        )
        .action(async (runId: string, opts: Conn & { commandTtl?: string; wait?: boolean }) => {
          const format = parseFormat(opts.output, ['text', 'json', 'yaml'] as const);
          const ttl = commandTtl(opts.commandTtl);
          await withNats(opts, async (s) => {
            const payload = { commandId: newCommandId(), runId, ...(opts.wait ? { waitForLocks: true } : {}) };
            await sendCommand(s, { type, payload }, ttl);
            // A resume with --wait may have been queued behind another run's nodes: say so.
            const queued =
              type === 'ResumeDeployment' && opts.wait
                ? (await query<RunEventsRequest, RunEventEntry[]>(s, s.subjects.runs.events, { runId })).at(-1)
                : undefined;
            const word =
              type === 'StopDeployment' ? 'stopping' : queued?.event.type === 'DeploymentQueued' ? 'queued' : 'resumed';
            await print(format, { runId, command: type, ...(word === 'queued' ? { queued: true } : {}) }, () =>
              queued?.event.type === 'DeploymentQueued'
                ? `queued ${runId}: ${queuedDetail(queued.event.data.heldBy)}\n`
                : `${word} ${runId}\n`,
            );
          });
        }),
    );
  };
  control('stop', 'stop a run gracefully (running tasks finish, nothing new starts)', 'StopDeployment');
  control('resume', 'resume a stopped run where it stopped', 'ResumeDeployment');

  addConnectionOptions(
    addCommandTtlOption(program.command('retry'))
      .argument('<RUN>', 'run id of an ended run')
      .summary('rerun the failed task instances of a run in a new run')
      .addOption(
        new Option(
          '--failed-only',
          'only the failed and dep_failed task instances (what retry does by default)',
        ).conflicts('allUnfinished'),
      )
      .option('--all-unfinished', 'every task instance that did not succeed, including those a stop left pending')
      .option('--watch', 'follow the new run (Ctrl-C: stop it or detach, as deploy --watch)')
      .option(
        '--wait',
        'when another running deployment holds a node the retry needs, queue behind it instead of being refused',
      )
      .option('--run-id <ID>', 'id of the new run')
      .option('-o, --output <FORMAT>', 'text|json|yaml', 'text')
      .addHelpText('after', '\nExample:\n  granule retry 20261122-101500-ab12 --failed-only --watch\n')
      .action(
        async (
          runId: string,
          opts: Conn & {
            allUnfinished?: boolean;
            watch?: boolean;
            wait?: boolean;
            runId?: string;
            commandTtl?: string;
          },
        ) => {
          const format = parseFormat(opts.output, ['text', 'json', 'yaml'] as const);
          checkRunIdOption(opts.runId);
          const newRun = opts.runId ?? newRunId();
          const ttl = commandTtl(opts.commandTtl);
          await withNats(opts, async (s) => {
            await sendCommand(
              s,
              {
                type: 'RetryFailed',
                payload: {
                  commandId: newCommandId(),
                  runId,
                  newRunId: newRun,
                  failedOnly: !opts.allUnfinished,
                  ...(opts.wait ? { waitForLocks: true } : {}),
                },
              },
              ttl,
            );
            if (!opts.watch) {
              // A retry whose nodes another run holds is refused (or queued, with --wait): say so.
              const refused = await waitUntilPlanned(s, newRun, (line) => process.stderr.write(`${line}\n`));
              await print(format, { runId: newRun, retryOf: runId }, () => `${newRun}\n`);
              if (refused) throw new ServiceError(refused.code, `run ${newRun} was refused: ${refused.reason}`);
              return;
            }
            process.stderr.write(`run ${newRun} (retry of ${runId})\n`);
            const summary = await watchWithProgress(s, newRun);
            // A retry of a check run is a check (ADR 0031): say what it found.
            if (summary.check) await writeCheckRecap(s, summary, format, false);
            else await print(format, summary, () => renderRecap(summary));
            if (summary.phase !== 'succeeded') process.exitCode = 1;
          });
        },
      ),
  );
}
