import { IDENTIFIER_RULES, InvalidInputError, isIdentifier } from '@granule/core';
import type { Diagnostic } from '@granule/core';
import { mergeTaskLayers } from '@granule/planner';
import type { PlanFilters, PlanRequest } from '@granule/planner';
import { TASK_TYPES, mergeParseResults, parseNodesFile, parseTaskData, planSizeProblems } from '@granule/task-model';
import type { ClusterSpec, NodeSpec, TaskDataOptions, TaskDefinition } from '@granule/task-model';

/** The inline form of a plan request: task records per graph type, nodes and cluster data. */
export interface InlinePlanInputs {
  graphs: Record<string, unknown[]>;
  nodes: unknown[];
  /** `{status?, settings?, nodes?, tasks?}` as in CLUSTER.yaml; `tasks` override the default graph's tasks. */
  cluster?: Record<string, unknown>;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A record already normalised by the task-model parser (a serialised `TaskDefinition`) carries
 * `requiredFor` or `source`; Fuel records use `required_for` and have no `source`.
 */
export function isNormalisedTaskRecord(record: unknown): boolean {
  return isRecord(record) && ('requiredFor' in record || 'source' in record);
}

/**
 * Turns inline inputs into the planner's request the way `granule plan` does with files:
 * picks `graph` (an unknown one is `PLAN_UNKNOWN_GRAPH`, naming the graphs there are), reads
 * task records (normalised `TaskDefinition`s as they are, Fuel records through the task-model
 * parser), nodes (NODES.yaml rules) and cluster data, and merges the cluster's task overrides
 * into the default graph. Throws `InvalidInputError` with every problem found; returns warnings.
 */
export function planRequestFromInline(
  inline: InlinePlanInputs,
  graph: string,
  filters: PlanFilters = {},
): { request: PlanRequest; warnings: Diagnostic[] } {
  const available = Object.keys(inline.graphs);
  if (!(graph in inline.graphs) && !(graph === 'default' && available.length === 0)) {
    throw new InvalidInputError([
      {
        severity: 'error',
        code: 'PLAN_UNKNOWN_GRAPH',
        message: `graph ${graph}: the tasks define no such graph (available: ${available.sort().join(', ') || 'none'})`,
      },
    ]);
  }
  const diagnostics: Diagnostic[] = [];
  const release = readTaskRecords(inline.graphs[graph] ?? [], `inline.graphs.${graph}`, diagnostics);
  const nodes = readNodes(inline.nodes, 'inline.nodes', diagnostics);
  const cluster = inline.cluster === undefined ? undefined : readCluster(inline.cluster, diagnostics);
  const merged = mergeTaskLayers({ release, cluster: graph === 'default' ? (cluster?.overrides ?? []) : [] });
  diagnostics.push(...merged.diagnostics);
  if (!diagnostics.some((d) => d.severity === 'error')) diagnostics.push(...planSizeProblems(merged.tasks, nodes));
  const errors = diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) throw new InvalidInputError(errors);
  return {
    request: { tasks: merged.tasks, nodes, ...(cluster ? { cluster: cluster.spec } : {}), filters },
    warnings: diagnostics.filter((d) => d.severity === 'warning'),
  };
}

/** One list of task records: all normalised, or all Fuel records (parsed), never a mix. */
function readTaskRecords(
  records: unknown[],
  file: string,
  diagnostics: Diagnostic[],
  options: TaskDataOptions = {},
): TaskDefinition[] {
  if (!Array.isArray(records)) {
    diagnostics.push({ severity: 'error', code: 'TASK_FILE_SHAPE', file, message: 'expected a list of task records' });
    return [];
  }
  const normalised = records.filter(isNormalisedTaskRecord).length;
  if (normalised === 0) {
    const parsed = parseTaskData(records, file, options);
    diagnostics.push(...parsed.diagnostics);
    return parsed.tasks;
  }
  if (normalised < records.length) {
    diagnostics.push({
      severity: 'error',
      code: 'INLINE_MIXED_TASK_RECORDS',
      file,
      message: `mixes ${normalised} normalised task definitions (with requiredFor/source) and ${records.length - normalised} Fuel records; send one kind per graph`,
    });
    return [];
  }
  const tasks: TaskDefinition[] = [];
  records.forEach((record, i) => {
    const problems = taskDefinitionProblems(record as Record<string, unknown>);
    for (const p of problems) {
      const id = (record as Record<string, unknown>).id;
      diagnostics.push({
        severity: 'error',
        code: 'TASK_BAD_RECORD',
        file,
        path: `[${i}].${p.field}`,
        message: p.message,
        ...(typeof id === 'string' ? { taskId: id } : {}),
      });
    }
    if (problems.length === 0) tasks.push(record as unknown as TaskDefinition);
  });
  // Two definitions of one id: the same TASK_DUPLICATE_ID error the file parsers give.
  const unique = mergeParseResults([{ tasks, diagnostics: [] }]);
  diagnostics.push(...unique.diagnostics);
  return unique.tasks;
}

/** The fields the planner relies on; a serialised TaskDefinition has them all. */
function taskDefinitionProblems(r: Record<string, unknown>): Array<{ field: string; message: string }> {
  const problems: Array<{ field: string; message: string }> = [];
  const need = (field: string, ok: boolean, expected: string): void => {
    if (!ok)
      problems.push({
        field,
        message: `expected ${expected} in a normalised task definition, got ${JSON.stringify(r[field]) ?? 'nothing'}`,
      });
  };
  need('id', isIdentifier('taskId', r.id), `a task id (${IDENTIFIER_RULES.taskId.rule})`);
  need('type', (TASK_TYPES as readonly unknown[]).includes(r.type), `one of ${TASK_TYPES.join(', ')}`);
  need('version', typeof r.version === 'string', 'a string');
  need(
    'roles',
    r.roles === null || (isRecord(r.roles) && typeof r.roles.kind === 'string'),
    'null or a role selector ({kind, ...})',
  );
  for (const list of ['requires', 'requiredFor', 'crossDepends', 'crossDependedBy'])
    need(list, Array.isArray(r[list]), 'a list');
  need('parameters', isRecord(r.parameters), 'a mapping');
  need('failOnError', typeof r.failOnError === 'boolean', 'true or false');
  const s = r.source;
  need(
    'source',
    isRecord(s) && typeof s.file === 'string' && typeof s.line === 'number' && typeof s.index === 'number',
    '{file, line, index}',
  );
  return problems;
}

/** Nodes with the NODES.yaml rules (`parseNodesFile`); positions are key paths, there are no lines. */
function readNodes(nodes: unknown, file: string, diagnostics: Diagnostic[]): NodeSpec[] {
  const parsed = parseNodesFile(JSON.stringify(nodes ?? []), file);
  diagnostics.push(...parsed.diagnostics.map(({ line: _line, ...d }) => d));
  return parsed.nodes;
}

/** CLUSTER.yaml's rules (`granule plan --cluster`): status, settings, nodes, task overrides. */
function readCluster(
  doc: Record<string, unknown>,
  diagnostics: Diagnostic[],
): { spec: ClusterSpec; overrides: TaskDefinition[] } {
  const file = 'inline.cluster';
  const bad = (path: string, message: string): void => {
    diagnostics.push({ severity: 'error', code: 'CLUSTER_BAD_FIELD', file, path, message });
  };
  const status = doc.status ?? 'new';
  if (typeof status !== 'string')
    bad('status', `expected a string such as new or operational, got ${JSON.stringify(status)}`);
  const settings = doc.settings ?? {};
  if (!isRecord(settings)) bad('settings', `expected a mapping, got ${JSON.stringify(settings)}`);
  const nodes = doc.nodes === undefined ? undefined : readNodes(doc.nodes, `${file}.nodes`, diagnostics);
  const overrides =
    doc.tasks === undefined
      ? []
      : readTaskRecords(doc.tasks as unknown[], `${file}.tasks`, diagnostics, { format: 'deployment-tasks' });
  return {
    spec: {
      ...doc,
      status: status as string,
      settings: settings as Record<string, unknown>,
      ...(nodes ? { nodes } : {}),
    },
    overrides,
  };
}
