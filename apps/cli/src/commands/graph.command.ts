import type { Command } from 'commander';
import { UsageError } from '@granule/core';
import type { RunGraphReply, RunGraphRequest } from '@granule/contracts';
import { instancesDotWriter, instancesMermaidWriter } from '@granule/planner';
import type { PlanInstance } from '@granule/planner';
import { requestPlan } from '@granule/plan-store';
import { maskTaskParameters } from '@granule/task-model';
import { addConnectionOptions } from '../connection';
import { unwrapReply } from '@granule/messaging';
import { query, withNats } from '../connection/nats-session';
import { commaList } from '../inputs/read-input';
import { parseFormat, toYaml, writeOut } from '../output';

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

/** How long one page of a graph may take: the first page of a large run loads its plan (20 s at 3M instances). */
export const GRAPH_PAGE_TIMEOUT_MS = 120_000;

export interface GraphWriter {
  start(): string;
  /** One `runs.graph` reply, in the order they come. */
  page(reply: RunGraphReply): string;
  end(): string;
}

/**
 * Writes a graph a page at a time, coloured by status when the graph is a run's; secrets show as
 * `***`. What the pages make together is one document: for json one array of entries (each with
 * its `status` for a run), for yaml one sequence of them, for dot one digraph, for mermaid one
 * flowchart.
 */
export function graphWriter(format: 'dot' | 'mermaid' | 'json' | 'yaml'): GraphWriter {
  let statuses: Record<string, string> | undefined;
  let written = 0;
  const status = (i: PlanInstance): string | undefined => statuses?.[`${i.task}@${i.node}`];
  const masked = (reply: RunGraphReply): PlanInstance[] => {
    statuses = reply.statuses;
    return reply.instances.map((i) => ({ ...i, parameters: maskTaskParameters(i) }));
  };
  const entries = (reply: RunGraphReply): unknown[] => {
    const instances = masked(reply);
    return statuses ? instances.map((i) => ({ ...i, status: status(i) })) : instances;
  };
  if (format === 'json')
    return {
      start: () => '',
      page(reply) {
        let out = '';
        for (const entry of entries(reply))
          out += `${written++ === 0 ? '[\n' : ',\n'}${JSON.stringify(entry, null, 2).replace(/^/gm, '  ')}`;
        return out;
      },
      end: () => (written === 0 ? '[]\n' : '\n]\n'),
    };
  if (format === 'yaml')
    return {
      start: () => '',
      page(reply) {
        const list = entries(reply);
        written += list.length;
        return list.length ? toYaml(list) : '';
      },
      end: () => (written === 0 ? toYaml([]) : ''),
    };
  const graph =
    format === 'dot'
      ? instancesDotWriter((i) =>
          statuses ? (i.node === 'sync' ? undefined : DOT_COLORS[status(i) ?? '']) : undefined,
        )
      : instancesMermaidWriter((i) => (statuses ? (i.node === 'sync' ? undefined : status(i)) : undefined));
  return { start: () => graph.start(), page: (reply) => graph.page(masked(reply)), end: () => graph.end() };
}

/** Renders one reply whole (see `graphWriter`). */
export function renderGraph(format: 'dot' | 'mermaid' | 'json' | 'yaml', graph: RunGraphReply): string {
  const w = graphWriter(format);
  return w.start() + w.page(graph) + w.end();
}

/**
 * Asks `runs.graph` page by page and writes each page as it comes: no reply, and nothing here,
 * holds a large plan whole. Nothing is written before the first page came: a run that does not
 * exist (or no orchestrator) leaves stdout empty.
 */
export async function writeGraphPages(
  ask: (request: RunGraphRequest) => Promise<RunGraphReply>,
  request: RunGraphRequest,
  writer: GraphWriter,
  write: (text: string) => Promise<void>,
): Promise<number> {
  let pages = 0;
  let cursor: string | undefined;
  do {
    const reply = await ask(cursor === undefined ? request : { ...request, cursor });
    if (pages === 0) await write(writer.start());
    pages++;
    const text = writer.page(reply);
    if (text) await write(text);
    cursor = reply.next;
  } while (cursor !== undefined);
  await write(writer.end());
  return pages;
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
        await writeGraphPages(
          (q) => query<RunGraphRequest, RunGraphReply>(s, s.subjects.runs.graph, q, GRAPH_PAGE_TIMEOUT_MS),
          request,
          graphWriter(format),
          writeOut,
        );
      });
    });
  addConnectionOptions(cmd);
}
