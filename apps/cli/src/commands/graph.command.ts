import type { Command } from 'commander';
import { UsageError } from '@granule/core';
import type { RunGraphReply, RunGraphRequest } from '@granule/contracts';
import { renderInstancesDot, renderInstancesMermaid } from '@granule/planner';
import type { PlanInstance } from '@granule/planner';
import { requestPlan } from '@granule/plan-store';
import { maskTaskParameters } from '@granule/task-model';
import { addConnectionOptions } from '../connection';
import { unwrapReply } from '@granule/messaging';
import { query, withNats } from '../connection/nats-session';
import { commaList } from '../inputs/read-input';
import { parseFormat, toJson, toYaml, writeOut } from '../output';

const DOT_COLORS: Record<string, string> = {
  succeeded: 'darkgreen',
  failed: 'red',
  timed_out: 'red',
  dep_failed: 'orange',
  skipped: 'gray',
  running: 'blue',
  dispatched: 'blue',
};

interface GraphOptions {
  env?: string;
  run?: string;
  graph: string;
  node?: string[];
  output: string;
  natsUrl?: string;
  subjectPrefix?: string;
}

/** Renders plan entries, coloured by status when the graph is a run's; secrets show as `***`. */
export function renderGraph(format: 'dot' | 'mermaid' | 'json' | 'yaml', graph: RunGraphReply): string {
  const reply = { ...graph, instances: graph.instances.map((i) => ({ ...i, parameters: maskTaskParameters(i) })) };
  const status = (i: PlanInstance): string | undefined => reply.statuses?.[`${i.task}@${i.node}`];
  if (format === 'json' || format === 'yaml') {
    const data = reply.statuses ? reply.instances.map((i) => ({ ...i, status: status(i) })) : reply.instances;
    return format === 'json' ? toJson(data) : toYaml(data);
  }
  if (format === 'dot')
    return renderInstancesDot(
      reply.instances,
      reply.statuses ? (i) => (i.node === 'sync' ? undefined : DOT_COLORS[status(i) ?? '']) : undefined,
    );
  return renderInstancesMermaid(
    reply.instances,
    reply.statuses ? (i) => (i.node === 'sync' ? undefined : status(i)) : undefined,
  );
}

export function registerGraphCommand(program: Command): void {
  const cmd = program
    .command('graph')
    .summary("export an environment's plan or a run's graph (coloured by outcome)")
    .option('--env <ENV>', 'plan this environment (graph-planner) and export it')
    .option('--run <RUN>', "export a run's plan with each task's outcome")
    .option('--graph <TYPE>', 'graph type, with --env', 'default')
    .option('--node <UID,...>', 'only these nodes, with --env', commaList)
    .option('-o, --output <FORMAT>', 'dot|mermaid|json|yaml', 'dot')
    .addHelpText(
      'after',
      '\nExamples:\n  granule graph --env demo -o mermaid\n  granule graph --run demo-1-2-deploy -o dot | dot -Tsvg > run.svg\n',
    )
    .action(async (opts: GraphOptions) => {
      const format = parseFormat(opts.output, ['dot', 'mermaid', 'json', 'yaml'] as const);
      if (!opts.env === !opts.run) throw new UsageError('give exactly one of --env ENV or --run RUN');
      // A run's graph is the one it ran, on its nodes: --graph and --node choose what --env plans.
      const envOnly = [opts.graph !== 'default' ? '--graph' : '', opts.node?.length ? '--node' : ''].filter(Boolean);
      if (opts.run && envOnly.length > 0)
        throw new UsageError(
          `--run exports the graph the run ran; ${envOnly.join(' and ')} ${envOnly.length > 1 ? 'go' : 'goes'} with --env only`,
        );
      await withNats(opts, async (s) => {
        let request: RunGraphRequest = { runId: opts.run };
        if (opts.env) {
          const plan = await requestPlan(s.nc, s.prefix, {
            envId: opts.env,
            graph: opts.graph,
            ...(opts.node?.length ? { filters: { nodes: opts.node } } : {}),
          });
          request = { planId: unwrapReply(plan).planId };
        }
        await writeOut(
          renderGraph(format, await query<RunGraphRequest, RunGraphReply>(s, s.subjects.runs.graph, request)),
        );
      });
    });
  addConnectionOptions(cmd);
}
