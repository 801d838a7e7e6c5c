import type { Command } from 'commander';
import { UsageError } from '@granule/core';
import type { RunEventEntry, RunEventsRequest, RunShowRequest, RunSummary, StartDeployment } from '@granule/contracts';
import { addConnectionOptions } from '../connection';
import { newCommandId, newRunId, query, sendCommand, withNats } from '../connection/nats-session';
import type { NatsSession } from '../connection/nats-session';
import { commaList } from '../inputs/read-input';
import { parseFormat, toJson, toYaml, writeOut } from '../output';
import { loadPlanRequest } from './plan.command';
import { describeEvent, renderRecap } from './run-format';

interface DeployOptions {
  env?: string;
  tasks?: string[];
  release?: string;
  nodes?: string;
  plugin?: string[];
  cluster?: string;
  graph: string;
  start?: string;
  end?: string;
  skip?: string[];
  only?: string[];
  node?: string[];
  dryRun?: boolean;
  noop?: boolean;
  watch?: boolean;
  runId?: string;
  output: string;
  natsUrl?: string;
  subjectPrefix?: string;
}

/** Follows a run's events until it ends; prints a line per event and the recap. Returns the final summary. */
export async function watchRun(session: NatsSession, runId: string, print: (line: string) => void, pollMs = 300): Promise<RunSummary> {
  let after = 0;
  for (;;) {
    const entries = await query<RunEventsRequest, RunEventEntry[]>(session, session.subjects.runs.events, { runId, after });
    for (const entry of entries) {
      print(describeEvent(entry));
      after = entry.version;
    }
    const done = entries.some((e) => ['DeploymentSucceeded', 'DeploymentFailed', 'DeploymentStopped', 'DeploymentRefused'].includes(e.event.type));
    if (done) return query<RunShowRequest, RunSummary>(session, session.subjects.runs.show, { runId });
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

async function runDeploy(opts: DeployOptions): Promise<void> {
  const format = parseFormat(opts.output, ['text', 'json', 'yaml'] as const);
  if (!opts.env && !opts.tasks?.length && !opts.release) throw new UsageError('say what to deploy: --env ENV, or --release DIR / --tasks PATH... with --nodes NODES.yaml');
  if (opts.env && (opts.tasks?.length || opts.release)) throw new UsageError('--env plans from config-store; do not combine it with --tasks or --release');
  const filters = {
    ...(opts.start ? { start: opts.start } : {}),
    ...(opts.end ? { end: opts.end } : {}),
    ...(opts.skip?.length ? { skip: opts.skip } : {}),
    ...(opts.only?.length ? { only: opts.only } : {}),
    ...(opts.node?.length ? { nodes: opts.node } : {}),
  };
  let inline: StartDeployment['inline'];
  if (!opts.env) {
    if (!opts.nodes) throw new UsageError('--nodes NODES.yaml is needed with --tasks or --release');
    const { request, warnings } = await loadPlanRequest({ ...opts, nodes: opts.nodes, output: 'json' });
    for (const w of warnings) process.stderr.write(`warning: ${w.message}\n`);
    inline = { graphs: { [opts.graph]: request.tasks }, nodes: request.nodes, ...(request.cluster ? { cluster: request.cluster } : {}) };
  }
  const runId = opts.runId ?? newRunId();
  const command: StartDeployment = {
    commandId: newCommandId(),
    runId,
    ...(opts.env ? { envId: opts.env } : {}),
    ...(inline ? { inline } : {}),
    graph: opts.graph,
    ...(Object.keys(filters).length ? { filters } : {}),
    dryRun: !!opts.dryRun,
    noop: !!opts.noop,
    requestedBy: process.env.USER ?? 'granule-cli',
  };
  await withNats(opts, async (session) => {
    await sendCommand(session, { type: 'StartDeployment', payload: command });
    if (!opts.watch) {
      await writeOut(format === 'text' ? `${runId}\n` : format === 'json' ? toJson({ runId }) : toYaml({ runId }));
      return;
    }
    process.stderr.write(`run ${runId}\n`);
    const summary = await watchRun(session, runId, (line) => process.stderr.write(`${line}\n`));
    await writeOut(format === 'text' ? renderRecap(summary) : format === 'json' ? toJson(summary) : toYaml(summary));
    if (summary.phase !== 'succeeded') process.exitCode = 1;
  });
}

export function registerDeployCommand(program: Command): void {
  const cmd = program
    .command('deploy')
    .summary('start a deployment (and watch it)')
    .description('Publishes StartDeployment on the command stream and prints the run id. With --watch, follows the run and prints a recap; the exit code is 1 unless it succeeded.')
    .option('--env <ENV>', 'plan the environment from config-store')
    .option('--tasks <PATH...>', 'plan these task files (inline, no config-store)')
    .option('--release <DIR|FILE.tar.gz>', 'plan this release-as-a-plugin (inline)')
    .option('--nodes <NODES.yaml>', 'the nodes, with --tasks / --release')
    .option('--plugin <DIR|FILE.tar.gz>', 'a plugin (repeatable), with --tasks / --release', (v: string, prev: string[] = []) => [...prev, v])
    .option('--cluster <CLUSTER.yaml>', 'cluster data for conditions, with --tasks / --release')
    .option('--graph <TYPE>', 'graph type', 'default')
    .option('--start <ID>', 'start at this task')
    .option('--end <ID>', 'end at this task')
    .option('--skip <ID,...>', 'skip these tasks', commaList)
    .option('--only <ID,...>', 'run only these tasks', commaList)
    .option('--node <UID,...>', 'deploy only these nodes', commaList)
    .option('--dry-run', 'validate and plan, run nothing')
    .option('--noop', 'agents report what they would do (puppet --noop)')
    .option('--watch', 'follow the run until it ends, then print the recap')
    .option('--run-id <ID>', 'use this run id instead of a generated one')
    .option('-o, --output <FORMAT>', 'text|json|yaml', 'text')
    .addHelpText('after', '\nExamples:\n  granule deploy --release examples/releases/example-release --nodes examples/releases/example-release/nodes.yaml --watch\n  granule deploy --env prod --graph provisioning --node 3,4 --watch\n')
    .action((opts: DeployOptions) => runDeploy(opts));
  addConnectionOptions(cmd);
}
