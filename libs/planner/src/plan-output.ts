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
  if (t?.source.plugin) out.plugin = t.source.plugin;
  return out;
}

/** All instances in execution order (by priority). */
export function planInstances(plan: Plan): PlanInstance[] {
  return Array.from(plan.order, (i) => instanceAt(plan, i));
}

/**
 * Writes `{"instances": [...], "groups": [...], "concurrency": {...}}` in chunks, so a plan of a
 * million instances never becomes one giant string.
 */
export function writePlanJson(plan: Plan, write: (chunk: string) => void, chunkSize = 2000): void {
  write('{"instances":[');
  let buffer: string[] = [];
  plan.order.forEach((i, k) => {
    buffer.push((k === 0 ? '\n' : ',\n') + JSON.stringify(instanceAt(plan, i)));
    if (buffer.length >= chunkSize) {
      write(buffer.join(''));
      buffer = [];
    }
  });
  if (buffer.length > 0) write(buffer.join(''));
  write(`\n],\n"groups":${JSON.stringify(plan.groups)},\n"concurrency":${JSON.stringify(plan.concurrency)}}\n`);
}

/** One line per instance in execution order: `priority  task@node  type  (skipped: reason)`. */
export function renderPlanText(plan: Plan): string {
  const lines: string[] = [];
  for (const i of plan.order) {
    if (plan.instKind[i] === 'barrier') continue;
    const skip = plan.skipped[i] ? `  (skipped: ${plan.skipped[i]})` : '';
    lines.push(`${String(plan.priority[i]).padStart(4)}  ${instanceName(plan, i)}  ${instanceType(plan, i)}  [${plan.stage[i]}]${skip}`);
  }
  return `${lines.join('\n')}\n`;
}

const quote = (s: string): string => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/** Graphviz: one cluster per node, edges from prerequisite to dependant. */
export function renderPlanDot(plan: Plan, colorOf?: (i: number) => string | undefined): string {
  const lines = ['digraph plan {', '  rankdir=LR;', '  node [shape=box, fontsize=10];'];
  const byNode = new Map<number, number[]>();
  for (const i of plan.order) byNode.set(plan.instNode[i], [...(byNode.get(plan.instNode[i]) ?? []), i]);
  let c = 0;
  for (const [n, list] of byNode) {
    lines.push(`  subgraph cluster_${c++} {`, `    label=${quote(plan.nodeNames[n])};`);
    for (const i of list) {
      const color = colorOf?.(i) ?? (plan.skipped[i] ? 'gray' : undefined);
      const style = plan.instKind[i] === 'task' ? '' : ', shape=ellipse';
      lines.push(`    ${quote(instanceName(plan, i))} [label=${quote(taskName(plan, i))}${style}${color ? `, color=${color}, fontcolor=${color}` : ''}];`);
    }
    lines.push('  }');
  }
  for (const i of plan.order) {
    for (const p of plan.preds[i]) lines.push(`  ${quote(instanceName(plan, p))} -> ${quote(instanceName(plan, i))};`);
    for (const group of plan.anyPreds.get(i) ?? []) for (const p of group) lines.push(`  ${quote(instanceName(plan, p))} -> ${quote(instanceName(plan, i))} [style=dashed];`);
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

/** Mermaid flowchart; ids are instance indices, labels are `task@node`. */
export function renderPlanMermaid(plan: Plan, classOf?: (i: number) => string | undefined): string {
  const lines = ['flowchart LR'];
  for (const i of plan.order) {
    const cls = classOf?.(i) ?? (plan.skipped[i] ? 'skipped' : undefined);
    lines.push(`  i${i}["${instanceName(plan, i).replace(/"/g, '#quot;')}"]${cls ? `:::${cls}` : ''}`);
  }
  for (const i of plan.order) {
    for (const p of plan.preds[i]) lines.push(`  i${p} --> i${i}`);
    for (const group of plan.anyPreds.get(i) ?? []) for (const p of group) lines.push(`  i${p} -.-> i${i}`);
  }
  lines.push('  classDef skipped fill:#eee,color:#888;');
  return `${lines.join('\n')}\n`;
}
