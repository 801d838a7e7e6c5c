import type { TaskType } from '@granule/task-model';
import type { Plan, PlanInstance } from './plan-types';

/** `task@node` of instance `i`. */
export function instanceName(plan: Plan, i: number): string {
  return `${taskName(plan, i)}@${plan.nodeNames[plan.instNode[i]]}`;
}

export function taskName(plan: Plan, i: number): string {
  return plan.syntheticNames.get(i) ?? plan.tasks[plan.instTask[i]].id;
}

function instanceType(plan: Plan, i: number): TaskType {
  const kind = plan.instKind[i];
  if (kind === 'task' || kind === 'stage') return plan.tasks[plan.instTask[i]].type;
  return kind === 'group' ? 'group' : 'stage';
}

/** The printable record of instance `i`. */
export function instanceAt(plan: Plan, i: number): PlanInstance {
  const t = plan.instTask[i] >= 0 ? plan.tasks[plan.instTask[i]] : undefined;
  const isTask = plan.instKind[i] === 'task';
  const out: PlanInstance = {
    task: taskName(plan, i),
    node: plan.nodeNames[plan.instNode[i]],
    type: instanceType(plan, i),
    stage: plan.stage[i],
    priority: plan.priority[i],
    requires: plan.preds[i].map((p) => instanceName(plan, p)),
    parameters: isTask && t ? t.parameters : {},
    skipped: plan.skipped[i] !== undefined,
  };
  const any = plan.anyPreds.get(i);
  if (any) out.requires_any = any.map((g) => g.map((p) => instanceName(plan, p)));
  if (plan.skipped[i]) out.skip_reason = plan.skipped[i];
  if (isTask && t && !t.failOnError) out.fail_on_error = false;
  if (t?.source.plugin) out.plugin = t.source.plugin;
  return out;
}

/** All instances in execution order (by priority). */
export function planInstances(plan: Plan): PlanInstance[] {
  return Array.from(plan.order, (i) => instanceAt(plan, i));
}

/**
 * Writes `{"instances": [...], "groups": [...], "concurrency": {...}}` in chunks, so a plan of a
 * million instances never becomes one giant string. Records are assembled from strings
 * prepared once per task and per instance (same fields and order as `instanceAt`).
 */
export function writePlanJson(plan: Plan, write: (chunk: string) => void, chunkSize = 4000): void {
  const n = plan.instTask.length;
  const nodeJson = plan.nodeNames.map((name) => JSON.stringify(name));
  const nameJson: string[] = new Array(n);
  for (let i = 0; i < n; i++) nameJson[i] = JSON.stringify(instanceName(plan, i));
  const taskParts = plan.tasks.map((t) => ({
    id: JSON.stringify(t.id),
    type: JSON.stringify(t.type),
    parameters: JSON.stringify(t.parameters),
    plugin: t.source.plugin ? `,"plugin":${JSON.stringify(t.source.plugin)}` : '',
    failOnError: t.failOnError ? '' : ',"fail_on_error":false',
  }));
  const record = (i: number): string => {
    const t = plan.instTask[i];
    const parts = t >= 0 ? taskParts[t] : undefined;
    const kind = plan.instKind[i];
    const task = plan.syntheticNames.has(i) ? JSON.stringify(plan.syntheticNames.get(i)) : (parts as { id: string }).id;
    const type =
      kind === 'task' || kind === 'stage' ? (parts as { type: string }).type : kind === 'group' ? '"group"' : '"stage"';
    const preds = plan.preds[i];
    let requires = '';
    for (let k = 0; k < preds.length; k++) requires += (k === 0 ? '' : ',') + nameJson[preds[k]];
    const any = plan.anyPreds.get(i);
    const requiresAny = any
      ? `,"requires_any":[${any.map((g) => `[${g.map((p) => nameJson[p]).join(',')}]`).join(',')}]`
      : '';
    const skip = plan.skipped[i];
    return (
      `{"task":${task},"node":${nodeJson[plan.instNode[i]]},"type":${type},"stage":"${plan.stage[i]}","priority":${plan.priority[i]},` +
      `"requires":[${requires}]${requiresAny},"parameters":${kind === 'task' && parts ? parts.parameters : '{}'},"skipped":${skip !== undefined}` +
      `${skip ? `,"skip_reason":"${skip}"` : ''}${kind === 'task' && parts ? parts.failOnError : ''}${parts ? parts.plugin : ''}}`
    );
  };
  write('{"instances":[');
  let buffer = '';
  let count = 0;
  for (let k = 0; k < plan.order.length; k++) {
    buffer += (k === 0 ? '\n' : ',\n') + record(plan.order[k]);
    if (++count >= chunkSize) {
      write(buffer);
      buffer = '';
      count = 0;
    }
  }
  if (buffer) write(buffer);
  write(`\n],\n"groups":${JSON.stringify(plan.groups)},\n"concurrency":${JSON.stringify(plan.concurrency)}}\n`);
}

/** A table of the instances in execution order: a header, then priority, task@node, type, stage and skip reason, aligned. */
export function renderPlanText(plan: Plan): string {
  const rows: string[][] = [['PRIORITY', 'INSTANCE', 'TYPE', 'STAGE', 'SKIPPED']];
  for (const i of plan.order) {
    if (plan.instKind[i] === 'barrier') continue;
    rows.push([
      String(plan.priority[i]),
      instanceName(plan, i),
      instanceType(plan, i),
      plan.stage[i],
      plan.skipped[i] ? String(plan.skipped[i]) : '',
    ]);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map((r) => `${r.map((v, c) => v.padEnd(widths[c])).join('  ')}`.trimEnd()).join('\n') + '\n';
}

const quote = (s: string): string => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
const isSync = (i: PlanInstance): boolean => i.node === 'sync' || i.type === 'group';

/** Writes a graph of plan entries a page at a time: `start`, `page` per page in plan order, `end`. */
export interface InstancesGraphWriter {
  start(): string;
  page(instances: PlanInstance[]): string;
  end(): string;
}

/**
 * Graphviz of plan entries: one cluster per node, edges from prerequisite to dependant,
 * dashed for any-of groups. `colorOf` colours an entry (e.g. by outcome); skipped ones are gray.
 */
export function renderInstancesDot(
  instances: PlanInstance[],
  colorOf?: (i: PlanInstance) => string | undefined,
): string {
  const w = instancesDotWriter(colorOf);
  return w.start() + w.page(instances) + w.end();
}

/**
 * `renderInstancesDot` a page at a time. A node's cluster is named by the order its node first
 * came in, so a node whose entries span pages is one cluster (Graphviz joins subgraphs of one name).
 */
export function instancesDotWriter(colorOf?: (i: PlanInstance) => string | undefined): InstancesGraphWriter {
  const clusters = new Map<string, number>();
  return {
    start: () => ['digraph plan {', '  rankdir=LR;', '  node [shape=box, fontsize=10];', ''].join('\n'),
    page(instances) {
      const lines: string[] = [];
      const byNode = new Map<string, PlanInstance[]>();
      for (const i of instances) {
        const list = byNode.get(i.node);
        if (list) list.push(i);
        else byNode.set(i.node, [i]);
      }
      for (const [node, list] of byNode) {
        let c = clusters.get(node);
        if (c === undefined) clusters.set(node, (c = clusters.size));
        lines.push(`  subgraph cluster_${c} {`, `    label=${quote(node)};`);
        for (const i of list) {
          const color = colorOf?.(i) ?? (i.skipped ? 'gray' : undefined);
          const style = isSync(i) ? ', shape=ellipse' : '';
          lines.push(
            `    ${quote(`${i.task}@${i.node}`)} [label=${quote(i.task)}${style}${color ? `, color=${color}, fontcolor=${color}` : ''}];`,
          );
        }
        lines.push('  }');
      }
      for (const i of instances) {
        const name = quote(`${i.task}@${i.node}`);
        for (const p of i.requires) lines.push(`  ${quote(p)} -> ${name};`);
        for (const group of i.requires_any ?? [])
          for (const p of group) lines.push(`  ${quote(p)} -> ${name} [style=dashed];`);
      }
      return lines.length ? `${lines.join('\n')}\n` : '';
    },
    end: () => '}\n',
  };
}

/** Mermaid flowchart of plan entries; `classOf` names a class (e.g. the outcome) defined at the end. */
export function renderInstancesMermaid(
  instances: PlanInstance[],
  classOf?: (i: PlanInstance) => string | undefined,
): string {
  const w = instancesMermaidWriter(classOf);
  return w.start() + w.page(instances) + w.end();
}

/**
 * `renderInstancesMermaid` a page at a time: an entry's id is `i<k>`, k its place in the plan (or,
 * for a prerequisite named before its own entry comes, the next free number when first named).
 */
export function instancesMermaidWriter(classOf?: (i: PlanInstance) => string | undefined): InstancesGraphWriter {
  const ids = new Map<string, string>();
  const idOf = (name: string): string => {
    let id = ids.get(name);
    if (id === undefined) ids.set(name, (id = `i${ids.size}`));
    return id;
  };
  return {
    start: () => 'flowchart LR\n',
    page(instances) {
      const lines: string[] = [];
      for (const i of instances) {
        const name = `${i.task}@${i.node}`;
        const cls = classOf?.(i) ?? (i.skipped ? 'skipped' : undefined);
        lines.push(`  ${idOf(name)}["${name.replace(/"/g, '#quot;')}"]${cls ? `:::${cls}` : ''}`);
      }
      for (const i of instances) {
        const me = idOf(`${i.task}@${i.node}`);
        for (const p of i.requires) lines.push(`  ${idOf(p)} --> ${me}`);
        for (const group of i.requires_any ?? []) for (const p of group) lines.push(`  ${idOf(p)} -.-> ${me}`);
      }
      return lines.length ? `${lines.join('\n')}\n` : '';
    },
    end: () =>
      [
        '  classDef skipped fill:#eee,color:#888;',
        '  classDef succeeded fill:#d4f4dd,color:#14532d;',
        '  classDef failed fill:#fde2e1,color:#7f1d1d;',
        '  classDef timed_out fill:#fde2e1,color:#7f1d1d;',
        '  classDef dep_failed fill:#ffedd5,color:#7c2d12;',
        '  classDef running fill:#dbeafe,color:#1e3a8a;',
        '  classDef dispatched fill:#dbeafe,color:#1e3a8a;',
        '',
      ].join('\n'),
  };
}

/** Graphviz of a plan (see `renderInstancesDot`). */
export function renderPlanDot(plan: Plan): string {
  return renderInstancesDot(planInstances(plan));
}

/** Mermaid of a plan (see `renderInstancesMermaid`). */
export function renderPlanMermaid(plan: Plan): string {
  return renderInstancesMermaid(planInstances(plan));
}
