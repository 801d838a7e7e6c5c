import { Option, type Command } from 'commander';
import { stat } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { InvalidInputError, UsageError } from '@granule/core';
import { request, SERVICES, ServiceUnavailableError } from '@granule/messaging';
import { parseStrategyDocument } from '@granule/deployment-strategy';
import type { TaskDefinition } from '@granule/task-model';
import type {
  PlannedMessage,
  PlanRequestMessage,
  RunShowRequest,
  RunSummary,
  StartDeployment,
  StrategyRef,
} from '@granule/contracts';
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
  storeLargeInputs,
  withNats,
} from '../connection/nats-session';
import type { NatsSession } from '../connection/nats-session';
import { ConfigStoreClient } from '@granule/config-store-client';
import { readInputFile } from '../inputs/read-input';
import { CliSecrets } from '../inputs/seal-inputs';
import { writeFindings } from '../messages';
import { parseFormat, toJson, toYaml, writeOut } from '../output';
import { LocalPackages } from '../inputs/local-packages';
import { addPlanInputOptions, filtersOf, loadPlanRequest } from './plan.command';
import type { PlanInputFlags } from './plan.command';
import { askPatiently, followRunEvents, waitUntilPlanned } from './follow-run';
import { describeEvent, renderRecap } from './run-format';
import { writeCheckRecap } from './check-recap';
import { RunProgress, showsAboveBars } from './run-progress';
import { WatchInterrupts } from './watch-interrupt';

export { followRunEvents, waitUntilPlanned, WATCH_SILENCE_LIMIT_MS } from './follow-run';

interface DeployOptions extends PlanInputFlags {
  env?: string;
  nodes?: string;
  dryRun?: boolean;
  noop?: boolean;
  check?: boolean;
  diff?: boolean;
  watch?: boolean;
  wait?: boolean;
  runId?: string;
  strategy?: string;
  output: string;
  natsUrl?: string;
  subjectPrefix?: string;
  commandTtl?: string;
}

/**
 * Follows a run's events until it ends, printing a line per event (a strategy run's phase runs
 * are followed too, indented), then returns the run's summary.
 */
export async function watchRun(
  session: NatsSession,
  runId: string,
  print: (line: string) => void,
  pollMs = 300,
  indent = '',
): Promise<RunSummary> {
  await followRunEvents(
    session,
    runId,
    async (entry) => {
      print(indent + describeEvent(entry));
      if (entry.event.type === 'StrategyPhaseStarted')
        await watchRun(session, entry.event.data.childRunId, print, pollMs, `${indent}    `);
    },
    print,
    { pollMs, waitForRun: indent !== '' },
  );
  return askPatiently(
    () => query<RunShowRequest, RunSummary>(session, session.subjects.runs.show, { runId }),
    print,
    pollMs,
  );
}

/**
 * Follows a run: on a terminal, progress bars (overall, per group or node), the running tasks,
 * failures and milestones above them as they happen, and the final state when it ends; otherwise
 * plain timestamped lines (CI friendly). Ctrl-C asks whether to stop the run or detach (on a
 * terminal) or detaches (elsewhere): see `WatchInterrupts`.
 */
export async function watchWithProgress(session: NatsSession, runId: string): Promise<RunSummary> {
  const stop = async (): Promise<void> => {
    await sendCommand(session, { type: 'StopDeployment', payload: { commandId: newCommandId(), runId } });
  };
  if (!process.stderr.isTTY) {
    const interrupts = new WatchInterrupts(runId, { pause: () => undefined, resume: () => undefined, stop }).install();
    try {
      return await watchRun(session, runId, (line) => process.stderr.write(`${line}\n`));
    } finally {
      interrupts.uninstall();
    }
  }
  let progress: RunProgress | undefined = new RunProgress();
  let last: RunSummary | undefined;
  // While Ctrl-C's question is on the screen, lines wait and the bars are not drawn.
  const held: string[] = [];
  const interrupts = new WatchInterrupts(runId, {
    pause: () => {
      progress?.stop();
      progress = undefined;
    },
    resume: () => {
      progress = new RunProgress();
      for (const line of held.splice(0)) progress.log(line);
      if (last) progress.update(last);
    },
    stop,
  }).install();
  // The bars are redrawn from the run's state half a second after events came, not on a timer:
  // a run with nothing happening costs no query.
  let refresh: NodeJS.Timeout | undefined;
  const refreshSoon = (): void => {
    refresh ??= setTimeout(() => {
      refresh = undefined;
      void query<RunShowRequest, RunSummary>(session, session.subjects.runs.show, { runId })
        .then((s) => {
          last = s;
          progress?.update(s);
        })
        .catch(() => undefined);
    }, 500);
  };
  try {
    const summary = await watchRun(session, runId, (line) => {
      refreshSoon();
      if (!showsAboveBars(line)) return;
      if (progress) progress.log(line);
      else held.push(line);
    });
    // The bars end on the run's final state, not on the last half-second refresh.
    last = summary;
    progress?.update(summary);
    return summary;
  } finally {
    clearTimeout(refresh);
    interrupts.uninstall();
    progress?.stop();
  }
}

/** A strategy file is sent inline (validated here first); anything else is a name config-store knows. */
async function strategyRef(value: string): Promise<StrategyRef> {
  if (!(await stat(value).catch(() => undefined))?.isFile()) return { name: value };
  const parsed = parseStrategyDocument(await readInputFile(value), value);
  const errors = parsed.diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) throw new InvalidInputError(errors);
  return { inline: parseYaml(await readInputFile(value)) as Record<string, unknown> };
}

/**
 * Inline inputs travel in the command (and a strategy run keeps them in its events): their
 * secrets are sealed first, with the key config-store gives when the environment has none.
 */
async function sealInline(
  inline: NonNullable<StartDeployment['inline']>,
  session: NatsSession,
  clusterFile = 'cluster',
): Promise<NonNullable<StartDeployment['inline']>> {
  const secrets = new CliSecrets(new ConfigStoreClient(session.nc, { prefix: session.prefix, timeoutMs: 3000 }));
  const graphs: Record<string, unknown[]> = {};
  for (const [graph, tasks] of Object.entries(inline.graphs))
    graphs[graph] = await secrets.taskDefinitions(tasks as TaskDefinition[], `graph ${graph}`);
  return {
    ...inline,
    graphs,
    ...(inline.cluster ? { cluster: await secrets.cluster(inline.cluster, clusterFile) } : {}),
  };
}

/** How long the filters' check waits for graph-planner before it leaves the check to the run. */
const FILTER_CHECK_TIMEOUT_MS = 15_000;

/**
 * A deploy whose filters name tasks or nodes (`--only`, `--skip`, `--start`, `--end`, `--node`)
 * is planned by graph-planner once without storing anything before the command is sent: a name
 * that does not exist (or any other reason the plan would be refused) is refused here, and no
 * run is recorded. Without an answer in time the run is sent and planned as usual.
 */
async function refuseBadFilters(session: NatsSession, payload: StartDeployment): Promise<void> {
  const check: PlanRequestMessage = {
    ...(payload.envId ? { envId: payload.envId } : {}),
    ...(payload.inline ? { inline: payload.inline } : {}),
    ...(payload.inputs ? { inputs: payload.inputs } : {}),
    graph: payload.strategy ? 'default' : payload.graph,
    ...(payload.filters ? { filters: payload.filters as Record<string, unknown> } : {}),
    validateOnly: true,
  };
  try {
    await request<PlannedMessage>(session.nc, SERVICES.planner, session.subjects.planner.plan, check, {
      timeoutMs: FILTER_CHECK_TIMEOUT_MS,
    });
  } catch (err) {
    // No graph-planner now: the run waits for one and is planned (or refused) as usual.
    if (err instanceof ServiceUnavailableError) return;
    throw err;
  }
}

async function runDeploy(opts: DeployOptions): Promise<void> {
  const format = parseFormat(opts.output, ['text', 'json', 'yaml'] as const);
  if (!opts.env && !opts.tasks?.length && !opts.release)
    throw new UsageError('say what to deploy: --env ENV, or --release DIR / --tasks PATH... with --nodes NODES.yaml');
  const inlineOnly = [
    opts.tasks?.length ? '--tasks' : '',
    opts.release ? '--release' : '',
    opts.nodes ? '--nodes' : '',
    opts.plugin?.length ? '--plugin' : '',
    opts.cluster ? '--cluster' : '',
  ].filter(Boolean);
  if (opts.env && inlineOnly.length > 0)
    throw new UsageError(
      `--env plans from config-store (its release, plugins, nodes and settings); do not combine it with ${inlineOnly.join(', ')}`,
    );
  if (opts.strategy && opts.graph !== 'default')
    throw new UsageError(
      `--strategy deploys the provisioning and default graphs group by group; do not combine it with --graph ${opts.graph}`,
    );
  if (opts.diff && !opts.check) throw new UsageError('--diff goes with --check (it shows what a check found)');
  checkRunIdOption(opts.runId);
  const filters = filtersOf(opts);
  const packages = new LocalPackages();
  try {
    await deployWith(opts, format, filters, packages);
  } finally {
    await packages.dispose();
  }
}

async function deployWith(
  opts: DeployOptions,
  format: 'text' | 'json' | 'yaml',
  filters: ReturnType<typeof filtersOf>,
  packages: LocalPackages,
): Promise<void> {
  let inline: StartDeployment['inline'];
  if (!opts.env) {
    if (!opts.nodes) throw new UsageError('--nodes NODES.yaml is needed with --tasks or --release');
    // A strategy run plans the provisioning graph (prepare) and the default graph (deploy).
    const wanted = opts.strategy ? ['provisioning', 'default'] : [opts.graph];
    const graphs: Record<string, unknown[]> = {};
    let base: Awaited<ReturnType<typeof loadPlanRequest>>['request'] | undefined;
    for (const graph of wanted) {
      try {
        const { request, warnings } = await loadPlanRequest(
          { ...opts, graph, nodes: opts.nodes, output: 'json' },
          packages,
        );
        if (!base) writeFindings(warnings);
        graphs[graph] = request.tasks;
        base = request;
      } catch (err) {
        const missing =
          err instanceof InvalidInputError && err.diagnostics.every((d) => d.code === 'PLAN_UNKNOWN_GRAPH');
        if (!missing || graph === opts.graph) throw err;
      }
    }
    const request = base as NonNullable<typeof base>;
    inline = { graphs, nodes: request.nodes, ...(request.cluster ? { cluster: request.cluster } : {}) };
  }
  const strategy = opts.strategy ? await strategyRef(opts.strategy) : undefined;
  const runId = opts.runId ?? newRunId();
  const command: StartDeployment = {
    commandId: newCommandId(),
    runId,
    ...(opts.env ? { envId: opts.env } : {}),
    ...(inline ? { inline } : {}),
    graph: opts.graph,
    ...(Object.keys(filters).length ? { filters } : {}),
    ...(strategy ? { strategy } : {}),
    dryRun: !!opts.dryRun,
    noop: !!opts.noop,
    ...(opts.check ? { check: true, ...(opts.diff ? { diff: true } : {}) } : {}),
    ...(opts.wait ? { waitForLocks: true } : {}),
  };
  await withNats(opts, async (session) => {
    // The folders' deployment files go first: the agents fetch them by the digests the tasks name.
    await packages.storeAll(new (await import('@granule/artifacts')).ArtifactStore(session.nc, session.prefix));
    if (command.inline) command.inline = await sealInline(command.inline, session, opts.cluster);
    const ttl = commandTtl(opts.commandTtl);
    // Inputs too large for one message are stored first and named in the command.
    const payload = await storeLargeInputs(session, command, ttl);
    if (payload.filters) await refuseBadFilters(session, payload);
    await sendCommand(session, { type: 'StartDeployment', payload }, ttl);
    if (!opts.watch) {
      // The orchestrator answers once the request is recorded; a run refused by its planning (an
      // unknown environment, a critical node offline, ...) must not look started.
      const refused = await waitUntilPlanned(session, runId, (line) => process.stderr.write(`${line}\n`));
      await writeOut(format === 'text' ? `${runId}\n` : format === 'json' ? toJson({ runId }) : toYaml({ runId }));
      if (refused) throw new ServiceError(refused.code, `run ${runId} was refused: ${refused.reason}`);
      // A dry run ends at once with every task pending: say it is one, not a deployment that did nothing.
      if (opts.dryRun)
        process.stderr.write(
          `run ${runId} is a dry run: planned, nothing sent to any host (granule graph --run ${runId} shows its plan)\n`,
        );
      return;
    }
    process.stderr.write(`run ${runId}\n`);
    const summary = await watchWithProgress(session, runId);
    if (opts.check) {
      await writeCheckRecap(session, summary, format, !!opts.diff);
      if (summary.phase !== 'succeeded') process.exitCode = 1;
      return;
    }
    await writeOut(format === 'text' ? renderRecap(summary) : format === 'json' ? toJson(summary) : toYaml(summary));
    if (summary.phase !== 'succeeded') process.exitCode = 1;
  });
}

export function registerDeployCommand(program: Command): void {
  const cmd = program
    .command('deploy')
    .summary('start a deployment (and watch it)')
    .description(
      'Publishes StartDeployment on the command stream and prints the run id once the run is planned (exit code 1 when it was refused: an unknown environment, a critical node offline, ...). With --watch, follows the run and prints a recap; the exit code is 1 unless it succeeded. Ctrl-C during --watch asks (on a terminal) whether to stop the run or detach; elsewhere it detaches (exit code 130, the run goes on; granule watch RUN reattaches).',
    )
    .option(
      '--env <ENV>',
      'plan the environment from config-store (else --tasks / --release with --nodes, sent inline)',
    )
    .option('--nodes <NODES.yaml>', 'the nodes, with --tasks / --release');
  addPlanInputOptions(cmd)
    .option('--strategy <NAME|FILE>', 'deploy group by group: a strategy uploaded to config-store, or a strategy file')
    .addOption(new Option('--dry-run', 'validate and plan, run nothing').conflicts('noop'))
    .addOption(new Option('--noop', 'agents report what they would do (puppet --noop)').conflicts('check'))
    .addOption(
      new Option(
        '--check',
        'check mode: run the plan on the agents without changing anything (puppet --noop, rsync --dry-run, file tasks compare, shell tasks only when check_safe); the recap says per task whether it would change something',
      ).conflicts('dryRun'),
    )
    .addOption(new Option('--diff', 'with --check: show the difference each task would make'))
    .option('--watch', 'follow the run until it ends, then print the recap')
    .option(
      '--wait',
      'when another running deployment holds a node this one needs, queue behind it (starts when the node is free) instead of being refused',
    )
    .option('--run-id <ID>', 'use this run id instead of a generated one')

    .option('-o, --output <FORMAT>', 'text|json|yaml', 'text')
    .addHelpText(
      'after',
      '\nExamples:\n  granule deploy --release examples/releases/example-release --nodes examples/releases/example-release/nodes.yaml --watch\n  granule deploy --release examples/releases/example-release --nodes nodes.yaml --strategy examples/strategies/deployment-strategy.yaml --watch\n  granule deploy --env prod --graph provisioning --node 3,4 --watch\n  granule deploy --env prod --wait --watch\n  granule deploy --env prod --check --diff --watch\n',
    )
    .action((opts: DeployOptions) => runDeploy(opts));
  addCommandTtlOption(cmd);
  addConnectionOptions(cmd);
}
