import { Command, Option } from 'commander';
import { LineCounter, isMap, isScalar, isSeq } from 'yaml';
import { InvalidInputError, UsageError } from '@granule/core';
import type { Diagnostic } from '@granule/core';
import {
  PlanCycleError,
  READY_ORDER_RULES,
  buildPlan,
  cycleDiagnostic,
  planInstances,
  renderPlanDot,
  renderPlanMermaid,
  renderPlanText,
  simulatePlan,
  writePlanJson,
} from '@granule/planner';
import type { Plan, PlanFilters, ReadyOrderRule, SimulationResult } from '@granule/planner';
import { maskTaskParameters, planSizeProblems, readYaml } from '@granule/task-model';
import type { ClusterSpec, TaskDefinition } from '@granule/task-model';
import { commaList, readInputFile } from '../inputs/read-input';
import {
  loadCluster,
  loadNodes,
  loadPlugin,
  loadReleasePlugin,
  loadTaskPaths,
  selectGraph,
} from '../inputs/plan-inputs';
import { LocalPackages } from '../inputs/local-packages';
import type { LoadedTasks } from '../inputs/plan-inputs';
import { closest, writeFindings } from '../messages';
import { parseFormat, toJson, toTable, toYaml, writeOut } from '../output';

const PLAN_FORMATS = ['json', 'yaml', 'text', 'dot', 'mermaid'] as const;
const SIMULATE_FORMATS = ['json', 'yaml', 'table', 'text'] as const;

/** The values of the options `addPlanInputOptions` declares. */
export interface PlanInputFlags {
  tasks?: string[];
  release?: string;
  plugin?: string[];
  cluster?: string;
  graph: string;
  start?: string;
  end?: string;
  skip?: string[];
  only?: string[];
  node?: string[];
}

export interface PlanCommandOptions extends PlanInputFlags {
  nodes: string;
  output: string;
  simulate?: boolean;
  durations?: string;
  readyOrder?: ReadyOrderRule;
}

/** The subgraph flags (`--start --end --skip --only --node`) as plan filters; unset ones are left out. */
export function filtersOf(options: Pick<PlanInputFlags, 'start' | 'end' | 'skip' | 'only' | 'node'>): PlanFilters {
  return {
    ...(options.start ? { start: options.start } : {}),
    ...(options.end ? { end: options.end } : {}),
    ...(options.skip?.length ? { skip: options.skip } : {}),
    ...(options.only?.length ? { only: options.only } : {}),
    ...(options.node?.length ? { nodes: options.node } : {}),
  };
}

/** Everything `granule plan` reads, loaded and checked. */
export async function loadPlanRequest(
  options: PlanCommandOptions,
  packages: LocalPackages,
): Promise<{ tasks: TaskDefinition[]; request: Parameters<typeof buildPlan>[0]; warnings: Diagnostic[] }> {
  if (!options.tasks?.length && !options.release)
    throw new UsageError('give the tasks with --tasks PATH... or --release DIR');
  const [release, nodes, cluster, plugins] = await Promise.all([
    options.release
      ? loadReleaseWithExtraTasks(options.release, options.tasks ?? [], packages)
      : loadTaskPaths(options.tasks ?? []),
    loadNodes(options.nodes),
    options.cluster ? loadCluster(options.cluster) : Promise.resolve(undefined),
    Promise.all((options.plugin ?? []).map((p) => loadPlugin(p, packages))),
  ]);
  const selected = selectGraph(
    release,
    options.graph,
    plugins.map((p) => p.plugin),
    cluster?.overrides ?? [],
  );
  const filters = filtersOf(options);
  const clusterSpec: ClusterSpec | undefined = cluster?.cluster;
  return {
    tasks: selected.tasks,
    request: { tasks: selected.tasks, nodes: nodes.nodes, cluster: clusterSpec, filters },
    warnings: [
      ...release.warnings,
      ...nodes.warnings,
      ...(cluster?.warnings ?? []),
      ...plugins.flatMap((p) => p.warnings),
      ...selected.warnings,
    ],
  };
}

/** A release plugin's graphs, with `--tasks` files added to the graphs their names give. */
async function loadReleaseWithExtraTasks(
  release: string,
  extra: string[],
  packages: LocalPackages,
): Promise<LoadedTasks> {
  const [fromRelease, fromFiles] = await Promise.all([
    loadReleasePlugin(release, packages),
    extra.length ? loadTaskPaths(extra) : undefined,
  ]);
  for (const [graph, tasks] of fromFiles?.graphs ?? [])
    fromRelease.graphs.set(graph, [...(fromRelease.graphs.get(graph) ?? []), ...tasks]);
  return { graphs: fromRelease.graphs, warnings: [...fromRelease.warnings, ...(fromFiles?.warnings ?? [])] };
}

/**
 * `--durations FILE`: `{task_id: seconds}`. Every problem is reported with its line; an id no task
 * of the planned graph has is an error (a typo would otherwise fall back to 1 unit unnoticed).
 * Read with the bounded YAML reader every input file goes through.
 */
async function loadDurations(file: string, known: ReadonlySet<string>): Promise<Record<string, number>> {
  const lineCounter = new LineCounter();
  const read = readYaml(await readInputFile(file), file, { syntaxCode: 'DURATIONS_SYNTAX', lineCounter });
  if (read.diagnostics.some((d) => d.severity === 'error')) throw new InvalidInputError(read.diagnostics);
  const doc = read.docs[0];
  const contents = doc?.contents ?? null;
  const lineOf = (node: unknown): number | undefined => {
    const range = (node as { range?: [number, number, number] } | null)?.range;
    return range ? lineCounter.linePos(range[0]).line : undefined;
  };
  if (!isMap(contents))
    throw new InvalidInputError([
      {
        severity: 'error',
        code: 'DURATIONS_BAD',
        file,
        line: lineOf(contents) ?? 1,
        message: `expected a mapping of task id to seconds such as {netconfig: 30}, got ${contents === null ? 'an empty file' : isSeq(contents) ? 'a list' : 'a single value'}`,
      },
    ]);
  const errors: Diagnostic[] = [];
  const out: Record<string, number> = {};
  for (const pair of contents.items) {
    const id = String(isScalar(pair.key) ? pair.key.value : pair.key);
    const value: unknown = isScalar(pair.value) ? pair.value.value : pair.value?.toJSON();
    const at = { severity: 'error' as const, code: 'DURATIONS_BAD', file, path: id, line: lineOf(pair.key) };
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
      errors.push({ ...at, message: `expected a non-negative number of seconds, got ${JSON.stringify(value)}` });
    else if (!known.has(id)) {
      const near = closest(id, known);
      errors.push({
        ...at,
        code: 'DURATIONS_UNKNOWN_TASK',
        message: `no task of the planned graph has this id${near ? ` (did you mean '${near}'?)` : ''}`,
      });
    } else out[id] = value;
  }
  if (errors.length > 0) throw new InvalidInputError(errors);
  return out;
}

function simulationTable(result: SimulationResult): string {
  return (
    toTable(
      result.timeline.map((e) => ({
        start: e.start,
        end: e.end,
        task: e.task,
        node: e.node,
        skipped: e.skipped ? 'yes' : '',
      })),
    ) + `\nmakespan: ${result.makespan}\ncritical path: ${result.critical_path.join(' -> ')}\n`
  );
}

async function printPlan(planned: Plan, format: (typeof PLAN_FORMATS)[number]): Promise<void> {
  // Secrets are shown as *** (ADR 0023); only the tasks' parameters change.
  const plan: Plan = { ...planned, tasks: planned.tasks.map((t) => ({ ...t, parameters: maskTaskParameters(t) })) };
  switch (format) {
    case 'json':
      // stdout is synchronous for files and pipes on Linux, so chunks never pile up in memory.
      writePlanJson(plan, (chunk) => process.stdout.write(chunk));
      return writeOut('');
    case 'yaml':
      return writeOut(toYaml({ instances: planInstances(plan), groups: plan.groups, concurrency: plan.concurrency }));
    case 'text':
      return writeOut(renderPlanText(plan));
    case 'dot':
      return writeOut(renderPlanDot(plan));
    case 'mermaid':
      return writeOut(renderPlanMermaid(plan));
  }
}

/** Builds the plan; a dependency cycle is reported with the files and lines of its tasks. */
function planOrExplain(request: Parameters<typeof buildPlan>[0]): Plan {
  try {
    return buildPlan(request);
  } catch (err) {
    if (err instanceof PlanCycleError) throw new InvalidInputError([cycleDiagnostic(err.cycle, request.tasks)]);
    throw err;
  }
}

export async function runPlanCommand(options: PlanCommandOptions): Promise<void> {
  const format = options.simulate
    ? parseFormat(options.output, SIMULATE_FORMATS)
    : parseFormat(options.output, PLAN_FORMATS);
  if (options.durations && !options.simulate)
    throw new UsageError('--durations gives the seconds of a simulation: add --simulate');
  if (options.readyOrder !== undefined && options.readyOrder !== 'longest-remaining-work' && !options.simulate)
    throw new UsageError(`--ready-order ${options.readyOrder} orders a simulation: add --simulate`);
  // The plan names each folder's package by digest, as the deploy would send it.
  const packages = new LocalPackages();
  const { request, warnings } = await loadPlanRequest(options, packages).finally(() => packages.dispose());
  writeFindings(warnings);
  const tooLarge = planSizeProblems(request.tasks, request.nodes);
  if (tooLarge.length > 0) throw new InvalidInputError(tooLarge);
  const plan = planOrExplain(request);
  if (!options.simulate) return printPlan(plan, format as (typeof PLAN_FORMATS)[number]);
  const known = new Set([...request.tasks, ...plan.tasks].map((t) => t.id));
  const result = simulatePlan(plan, {
    durations: options.durations ? await loadDurations(options.durations, known) : undefined,
    readyOrder: options.readyOrder,
  });
  if (format === 'json') return writeOut(toJson(result));
  if (format === 'yaml') return writeOut(toYaml(result));
  return writeOut(simulationTable(result));
}

/**
 * The options that say what to plan, shared by `plan` and `deploy`: task files or a release, plugins,
 * cluster data, the graph, and the subgraph filters.
 */
export function addPlanInputOptions(cmd: Command): Command {
  return cmd
    .option('--tasks <PATH...>', 'task files or folders (searched for *.yaml)')
    .option('--release <DIR|FILE.tar.gz>', 'a release-as-a-plugin: its graphs (default, provisioning, ...)')
    .option(
      '--plugin <DIR|FILE.tar.gz>',
      'a plugin folder or package (repeatable)',
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option('--cluster <CLUSTER.yaml>', 'cluster status, settings and task overrides, for conditions')
    .option('--graph <TYPE>', 'graph type', 'default')
    .option('--start <ID>', 'keep this task and everything after it')
    .option('--end <ID>', 'keep this task and everything it needs')
    .option('--skip <ID,...>', 'mark these tasks skipped (repeatable)', commaList)
    .option('--only <ID,...>', 'mark every other task skipped (repeatable)', commaList)
    .option('--node <UID,...>', 'only these nodes (repeatable)', commaList);
}

export function registerPlanCommand(program: Command): void {
  const cmd = program
    .command('plan')
    .summary('plan a deployment offline from task files and a nodes file')
    .description(
      'Builds the deployment plan (one entry per task per node) from Fuel task files, without any service.\n' +
        'PATH is a task file or a folder searched recursively for *.yaml.',
    )
    .requiredOption('--nodes <NODES.yaml>', 'nodes: [{uid, roles, tags?, labels?, rack?}]');
  addPlanInputOptions(cmd)
    .option('--simulate', 'run the plan on a virtual clock and print the timeline')
    .option('--durations <FILE>', 'with --simulate: seconds per task id (YAML or JSON mapping)')
    .addOption(
      new Option(
        '--ready-order <RULE>',
        "with --simulate: how a node picks among its ready tasks; deployments always use longest-remaining-work (astute-weight: Fuel astute's task weight, for comparison)",
      )
        .choices(READY_ORDER_RULES)
        .default('longest-remaining-work'),
    )
    .addOption(
      new Option('-o, --output <FORMAT>', 'json|yaml|text|dot|mermaid (with --simulate: json|yaml|table)').default(
        'text',
      ),
    )
    .addHelpText(
      'after',
      '\nExamples:\n' +
        '  granule plan --release examples/releases/example-release --nodes examples/releases/example-release/nodes.yaml -o text\n' +
        '  granule plan --release examples/releases/example-release --graph provisioning --nodes nodes.yaml --plugin examples/plugins/example-v5\n' +
        '  granule plan --tasks tasks/ --nodes nodes.yaml --start netconfig --end galera -o json\n' +
        '  granule plan --tasks tasks/ --nodes nodes.yaml --simulate --durations durations.yaml -o table\n' +
        '  granule plan --tasks tasks/ --nodes nodes.yaml --simulate --ready-order astute-weight -o json\n' +
        '\nExit codes: 0 ok, 1 invalid input (message names file, line and task), 2 usage error.\n',
    )
    .action(async (opts: PlanCommandOptions) => runPlanCommand(opts));
}
