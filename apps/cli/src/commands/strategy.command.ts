import type { Command } from 'commander';
import { formatDiagnostic, InvalidInputError, UsageError, type Diagnostic } from '@granule/core';
import { parseNodesFile, type NodeSpec } from '@granule/task-model';
import {
  buildReport,
  formatProcessingLog,
  parseStrategyDocument,
  planStrategy,
  simulateStrategy,
  type DeploymentStrategy,
  type GroupFailure,
  type GroupStatus,
  type NodeStatus,
  type StrategyOutcome,
  type StrategyReport,
} from '@granule/deployment-strategy';
import { EXIT_INVALID } from '../cli-error-handler';
import { readInputFile } from '../inputs/read-input';
import { summaryLine, writeFindings } from '../messages';
import { parseFormat, toJson, toTable, toYaml, writeOut } from '../output';

/** `strategy validate` output. Errors and warnings are rendered diagnostics: `file:line: path: message`. */
export interface ValidateOutput {
  valid: boolean;
  errors: string[];
  warnings: string[];
}

/** `strategy plan` output: group names in processing order, and each group's nodes. */
export interface PlanOutput {
  order: string[];
  groups: { name: string; critical: boolean; nodes: string[]; actionable: string[] }[];
}

/** `strategy simulate` output. */
export interface SimulateOutput {
  outcome: StrategyOutcome;
  groups: Record<string, { status: GroupStatus; failures: GroupFailure[] }>;
  nodes: Record<string, NodeStatus>;
}

/** What the plan and simulate commands computed, with the warnings met on the way. */
export interface Computed<T> {
  output: T;
  warnings: Diagnostic[];
  report?: StrategyReport;
}

const errorsIn = (diagnostics: Diagnostic[]): Diagnostic[] => diagnostics.filter((d) => d.severity === 'error');
const warningsIn = (diagnostics: Diagnostic[]): Diagnostic[] => diagnostics.filter((d) => d.severity === 'warning');

/** Reads and checks a strategy file (and a NODES file, for the node warnings); never throws on bad content. */
export async function validateStrategyFile(file: string, nodesFile?: string): Promise<ValidateOutput> {
  const text = await readInputFile(file);
  const diagnostics: Diagnostic[] = [];
  let nodes: NodeSpec[] | undefined;
  if (nodesFile !== undefined) {
    const parsed = parseNodesFile(await readInputFile(nodesFile), nodesFile);
    diagnostics.push(...parsed.diagnostics);
    if (errorsIn(parsed.diagnostics).length === 0) nodes = parsed.nodes;
  }
  diagnostics.push(...parseStrategyDocument(text, file, nodes).diagnostics);
  const errors = errorsIn(diagnostics).map(formatDiagnostic);
  return { valid: errors.length === 0, errors, warnings: warningsIn(diagnostics).map(formatDiagnostic) };
}

/** Reads both files; throws `InvalidInputError` with every error of either. */
async function load(
  file: string,
  nodesFile: string,
): Promise<{ strategy: DeploymentStrategy; nodes: NodeSpec[]; warnings: Diagnostic[] }> {
  const [text, nodesText] = await Promise.all([readInputFile(file), readInputFile(nodesFile)]);
  const nodesParsed = parseNodesFile(nodesText, nodesFile);
  const parsed = parseStrategyDocument(
    text,
    file,
    errorsIn(nodesParsed.diagnostics).length === 0 ? nodesParsed.nodes : undefined,
  );
  const diagnostics = [...nodesParsed.diagnostics, ...parsed.diagnostics];
  if (errorsIn(diagnostics).length > 0 || !parsed.strategy) throw new InvalidInputError(errorsIn(diagnostics));
  return { strategy: parsed.strategy, nodes: nodesParsed.nodes, warnings: warningsIn(diagnostics) };
}

/** Resolves the strategy's groups against the nodes, in processing order. */
export async function planStrategyFile(file: string, nodesFile: string): Promise<Computed<PlanOutput>> {
  const { strategy, nodes, warnings } = await load(file, nodesFile);
  const plan = planStrategy(strategy, nodes);
  return {
    output: {
      order: plan.order,
      groups: plan.groups.map((g) => ({
        name: g.name,
        critical: g.critical,
        nodes: g.nodes,
        actionable: g.actionable,
      })),
    },
    warnings,
  };
}

/** Runs the strategy with every node succeeding except the listed ones; unknown uids are a usage error. */
export async function simulateStrategyFile(
  file: string,
  nodesFile: string,
  fail: { prepare?: string[]; deploy?: string[] } = {},
): Promise<Computed<SimulateOutput>> {
  const { strategy, nodes, warnings } = await load(file, nodesFile);
  const known = new Set(nodes.map((n) => n.uid));
  const unknown = [
    ['--fail-prepare', fail.prepare ?? []],
    ['--fail-deploy', fail.deploy ?? []],
  ]
    .map(([flag, uids]) => [flag, (uids as string[]).filter((uid) => !known.has(uid))] as const)
    .filter(([, uids]) => uids.length > 0)
    .map(([flag, uids]) => `${flag}: unknown node uid(s): ${uids.join(', ')}`);
  if (unknown.length > 0) throw new UsageError(unknown.join('; '));

  const state = simulateStrategy(strategy, nodes, { failPrepare: fail.prepare ?? [], failDeploy: fail.deploy ?? [] });
  return {
    output: {
      outcome: state.outcome as StrategyOutcome,
      groups: Object.fromEntries(state.groups.map((g) => [g.name, { status: g.status, failures: g.failures }])),
      nodes: Object.fromEntries(state.nodeOrder.map((uid) => [uid, state.nodes[uid]])),
    },
    warnings,
    report: buildReport(state),
  };
}

const formatFailure = (f: GroupFailure): string =>
  f.criteria === 'depends_on' ? `depends_on ${f.needed}: FAILED` : `${f.criteria}: needed ${f.needed}, got ${f.actual}`;

export function renderValidate(out: ValidateOutput, file: string, format: 'json' | 'yaml' | 'text'): string {
  if (format === 'json') return toJson(out);
  if (format === 'yaml') return toYaml(out);
  const lines = [...out.errors.map((e) => `error: ${e}`), ...out.warnings.map((w) => `warning: ${w}`)];
  lines.push(summaryLine(file, { errors: out.errors.length, warnings: out.warnings.length }));
  return `${lines.join('\n')}\n`;
}

export function renderPlan(out: PlanOutput, format: 'json' | 'yaml' | 'table'): string {
  if (format === 'json') return toJson(out);
  if (format === 'yaml') return toYaml(out);
  return toTable(
    out.groups.map((g, i) => ({
      order: i + 1,
      name: g.name,
      critical: g.critical,
      nodes: g.nodes,
      actionable: g.actionable,
    })),
    ['order', 'name', 'critical', 'nodes', 'actionable'],
  );
}

export function renderSimulate(computed: Computed<SimulateOutput>, format: 'json' | 'yaml' | 'table'): string {
  const { output, report } = computed;
  if (format === 'json') return toJson(output);
  if (format === 'yaml') return toYaml(output);
  const groups = toTable(
    (report?.groups ?? []).map((g) => ({
      name: g.name,
      critical: g.critical,
      status: g.status,
      stage: g.stage,
      failures: g.failures.map(formatFailure).join('; '),
    })),
    ['name', 'critical', 'status', 'stage', 'failures'],
  );
  const nodes = toTable(
    Object.entries(report?.nodes ?? {}).map(([status, uids]) => ({ status, count: uids.length, nodes: uids })),
    ['status', 'count', 'nodes'],
  );
  return `${groups}\n${nodes}\n${report ? formatProcessingLog(report) : ''}outcome: ${output.outcome}\n`;
}

/** Splits `a,b` and repeated flags into one list of uids. */
function collectUids(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((v) => v.trim())
      .filter((v) => v !== ''),
  ];
}

/**
 * `granule strategy validate|plan|simulate`: deployment strategies (Airship DeploymentStrategy)
 * offline. Returns the `strategy` command so service-backed subcommands can be added to it.
 */
export function registerStrategyCommand(program: Command): Command {
  const strategy = program
    .command('strategy')
    .description('check, plan and simulate deployment strategies (groups of nodes deployed in dependency order)')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  granule strategy validate examples/strategies/deployment-strategy.yaml',
        '  granule strategy plan examples/strategies/deployment-strategy.yaml --nodes examples/strategies/nodes.yaml',
        '  granule strategy simulate examples/strategies/deployment-strategy.yaml --nodes examples/strategies/nodes.yaml --fail-deploy cmp201,cmp202',
        '',
      ].join('\n'),
    );

  strategy
    .command('validate')
    .description('check a DeploymentStrategy document; exit 0 when valid, 1 when not')
    .argument('<file>', 'strategy YAML (Airship envelope or a bare {groups: [...]})')
    .option('--nodes <file>', 'NODES.yaml, to also warn about groups that select no node')
    .option('-o, --output <format>', 'text | json | yaml', 'text')
    .addHelpText(
      'after',
      '\nJSON output: {"valid": bool, "errors": [string], "warnings": [string]}, each entry "file:line: path: message".\n\nExample:\n  granule strategy validate examples/strategies/deployment-strategy.yaml --nodes examples/strategies/nodes.yaml -o json\n',
    )
    .action(async (file: string, opts: { nodes?: string; output: string }) => {
      const format = parseFormat(opts.output, ['json', 'yaml', 'text'] as const);
      const out = await validateStrategyFile(file, opts.nodes);
      await writeOut(renderValidate(out, file, format));
      // The report ends with its summary: exit 1 without saying it a second time.
      if (!out.valid) process.exitCode = EXIT_INVALID;
    });

  strategy
    .command('plan')
    .description('show the processing order of the groups and the nodes each one selects and acts on')
    .argument('<file>', 'strategy YAML')
    .requiredOption('--nodes <file>', 'NODES.yaml: nodes: [{uid, name?, roles, tags?, labels?, rack?}]')
    .option('-o, --output <format>', 'json | yaml | table', 'table')
    .addHelpText(
      'after',
      '\n"nodes" are every node a group selects (all count in its success criteria); "actionable" are the ones it\nacts on, i.e. those no earlier group selects.\n\nExample:\n  granule strategy plan examples/strategies/deployment-strategy.yaml --nodes examples/strategies/nodes.yaml -o json\n',
    )
    .action(async (file: string, opts: { nodes: string; output: string }) => {
      const format = parseFormat(opts.output, ['json', 'yaml', 'table'] as const);
      const computed = await planStrategyFile(file, opts.nodes);
      writeFindings(computed.warnings);
      await writeOut(renderPlan(computed.output, format));
    });

  strategy
    .command('simulate')
    .description('run the strategy with made-up node results: every node succeeds unless listed')
    .argument('<file>', 'strategy YAML')
    .requiredOption('--nodes <file>', 'NODES.yaml')
    .option('--fail-prepare <uids>', 'comma-separated node uids that fail prepare (repeatable)', collectUids)
    .option('--fail-deploy <uids>', 'comma-separated node uids that fail deploy (repeatable)', collectUids)
    .option('-o, --output <format>', 'json | yaml | table', 'table')
    .addHelpText(
      'after',
      '\nOutcome: success, partial (some non-critical group or some node failed) or failed (a critical group failed).\n\nExample:\n  granule strategy simulate examples/strategies/deployment-strategy.yaml --nodes examples/strategies/nodes.yaml --fail-prepare ntp01 -o json\n',
    )
    .action(
      async (file: string, opts: { nodes: string; failPrepare?: string[]; failDeploy?: string[]; output: string }) => {
        const format = parseFormat(opts.output, ['json', 'yaml', 'table'] as const);
        const computed = await simulateStrategyFile(file, opts.nodes, {
          prepare: opts.failPrepare,
          deploy: opts.failDeploy,
        });
        writeFindings(computed.warnings);
        await writeOut(renderSimulate(computed, format));
      },
    );
  return strategy;
}
