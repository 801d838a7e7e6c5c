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
    const type = kind === 'task' || kind === 'stage' ? (parts as { type: string }).type : kind === 'group' ? '"group"' : '"stage"';
    const preds = plan.preds[i];
    let requires = '';
    for (let k = 0; k < preds.length; k++) requires += (k === 0 ? '' : ',') + nameJson[preds[k]];
    const any = plan.anyPreds.get(i);
    const requiresAny = any ? `,"requires_any":[${any.map((g) => `[${g.map((p) => nameJson[p]).join(',')}]`).join(',')}]` : '';
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
