import type { PlanGroup, PlanInstance } from '@granule/planner';
import { SYNC_NODE, readyTaskRank } from '@granule/planner';
import type { TaskType } from '@granule/task-model';

/** The plan as `granule plan -o json` prints it and the plan store keeps it. */
export interface PlanDocument {
  instances: PlanInstance[];
  groups: PlanGroup[];
  concurrency: Record<string, number>;
}

/** A fault-tolerance group with node indices. */
export interface ExecGroup {
  id: string;
  nodes: number[];
  tolerance: number;
}

/**
 * The plan in the shape the executor needs: instance indices, predecessor and successor
 * lists, per-node and per-task lookups, and each instance's remaining work (for choosing
 * among ready tasks). Built once per run from the stored plan document.
 */
export interface ExecutablePlan {
  size: number;
  keys: string[];
  index: Map<string, number>;
  task: string[];
  /** Index into `nodeNames`; -1 for `sync`. */
  node: Int32Array;
  nodeNames: string[];
  nodeIndex: Map<string, number>;
  /** Instances on each node. */
  instancesOfNode: number[][];
  type: TaskType[];
  parameters: Record<string, unknown>[];
  /** 1 when the instance does no work: sync points, group markers, skipped at plan time. */
  noWork: Uint8Array;
  /** Skipped at plan time (condition, filter, type). */
  planSkipped: Uint8Array;
  failOnError: Uint8Array;
  preds: number[][];
  anyPreds: Map<number, number[][]>;
  succ: number[][];
  /** Consumers of any-of groups: producer → [consumer, group index]. */
  anySucc: Map<number, [number, number][]>;
  /** Each instance's rank among ready tasks (`readyTaskRank`, the simulator's rule). */
  work: Float64Array;
  groups: ExecGroup[];
  /** Groups by node index. */
  groupsOfNode: number[][];
  concurrency: Map<string, number>;
}

/** Builds the executor's view of a plan document. */
export function toExecutablePlan(doc: PlanDocument): ExecutablePlan {
  const builder = new ExecutablePlanBuilder();
  for (const inst of doc.instances) builder.add(inst);
  return builder.finish(doc.groups, doc.concurrency);
}

/**
 * Builds an `ExecutablePlan` from instances given one at a time (as `decodePlanStream` yields
 * them), so the whole plan document is never held: an instance's `requires` names become
 * indices as it arrives and only the executor's arrays stay. Names and `parameters` are kept
 * as given (the stream shares one object per task).
 */
export class ExecutablePlanBuilder {
  private readonly keys: string[] = [];
  private readonly index = new Map<string, number>();
  private readonly task: string[] = [];
  private readonly nodeOf: number[] = [];
  private readonly nodeNames: string[] = [];
  private readonly nodeIndex = new Map<string, number>();
  private readonly type: TaskType[] = [];
  private readonly parameters: Record<string, unknown>[] = [];
  private readonly flags: number[] = [];
  private readonly priority: number[] = [];
  private readonly preds: number[][] = [];
  private readonly anyPreds = new Map<number, number[][]>();
  /** Names required before they were added: [instance, place in its list, name]. */
  private forward: Array<[number[], number, string]> = [];

  add(inst: PlanInstance): void {
    const i = this.keys.length;
    const key = `${inst.task}@${inst.node}`;
    this.keys.push(key);
    this.index.set(key, i);
    this.task.push(inst.task);
    let n = -1;
    if (inst.node !== SYNC_NODE) {
      const known = this.nodeIndex.get(inst.node);
      if (known === undefined) {
        n = this.nodeNames.push(inst.node) - 1;
        this.nodeIndex.set(inst.node, n);
      } else n = known;
    }
    this.nodeOf.push(n);
    this.type.push(inst.type);
    this.parameters.push(inst.parameters);
    const noWork = inst.node === SYNC_NODE || inst.type === 'group' || inst.type === 'stage' || inst.skipped;
    this.flags.push((noWork ? 1 : 0) | (inst.skipped ? 2 : 0) | (inst.fail_on_error === false ? 0 : 4));
    this.priority.push(inst.priority);
    this.preds.push(this.resolve(inst.requires));
    if (inst.requires_any?.length)
      this.anyPreds.set(
        i,
        inst.requires_any.map((g) => this.resolve(g)),
      );
  }

  private resolve(names: string[]): number[] {
    const out = new Array<number>(names.length);
    for (let k = 0; k < names.length; k++) {
      const p = this.index.get(names[k]);
      if (p === undefined) {
        out[k] = -1;
        this.forward.push([out, k, names[k]]);
      } else out[k] = p;
    }
    return out;
  }

  finish(planGroups: PlanGroup[], concurrency: Record<string, number>): ExecutablePlan {
    for (const [list, k, name] of this.forward) {
      const p = this.index.get(name);
      if (p === undefined) throw new Error(`plan document is inconsistent: '${name}' is required but not in the plan`);
      list[k] = p;
    }
    this.forward = [];
    const size = this.keys.length;
    const { preds, anyPreds, nodeNames, nodeIndex, priority } = this;
    const node = Int32Array.from(this.nodeOf);
    const noWork = new Uint8Array(size);
    const planSkipped = new Uint8Array(size);
    const failOnError = new Uint8Array(size);
    for (let i = 0; i < size; i++) {
      const f = this.flags[i];
      noWork[i] = f & 1;
      planSkipped[i] = (f >> 1) & 1;
      failOnError[i] = (f >> 2) & 1;
    }
    // Sized before filled: an array grown by push keeps spare room (17 slots for one element),
    // which at millions of instances is hundreds of MiB.
    const succCount = new Int32Array(size);
    for (let i = 0; i < size; i++) for (const p of preds[i]) succCount[p]++;
    const succ: number[][] = new Array<number[]>(size);
    for (let i = 0; i < size; i++) succ[i] = succCount[i] === 0 ? [] : new Array<number>(succCount[i]);
    succCount.fill(0);
    for (let i = 0; i < size; i++) for (const p of preds[i]) succ[p][succCount[p]++] = i;
    const anySucc = new Map<number, [number, number][]>();
    for (const [consumer, groups] of anyPreds) {
      groups.forEach((g, gi) => {
        for (const p of g) {
          const list = anySucc.get(p);
          if (list) list.push([consumer, gi]);
          else anySucc.set(p, [[consumer, gi]]);
        }
      });
    }
    // Instances come in priority order, so sorting by it gives an order with predecessors first
    // (a stored plan is already in that order: then nothing is sorted).
    const order = new Int32Array(size);
    let sorted = true;
    for (let i = 0; i < size; i++) {
      order[i] = i;
      if (i > 0 && priority[i] < priority[i - 1]) sorted = false;
    }
    if (!sorted) order.sort((a, b) => priority[a] - priority[b] || a - b);
    const duration = Float64Array.from(noWork, (v) => (v ? 0 : 1));
    const work = readyTaskRank({ order, preds, anyPreds, node, duration });
    const groups: ExecGroup[] = planGroups.map((g) => ({
      id: g.id,
      nodes: g.nodes.map((uid) => nodeIndex.get(uid)).filter((n): n is number => n !== undefined),
      tolerance: g.faultTolerance,
    }));
    const instancesOfNode: number[][] = nodeNames.map(() => []);
    for (let i = 0; i < size; i++) if (node[i] >= 0) instancesOfNode[node[i]].push(i);
    const groupsOfNode: number[][] = nodeNames.map(() => []);
    groups.forEach((g, gi) => {
      for (const n of g.nodes) groupsOfNode[n].push(gi);
    });
    return {
      size,
      keys: this.keys,
      index: this.index,
      task: this.task,
      node,
      nodeNames,
      nodeIndex,
      instancesOfNode,
      type: this.type,
      parameters: this.parameters,
      noWork,
      planSkipped,
      failOnError,
      preds,
      anyPreds,
      succ,
      anySucc,
      work,
      groups,
      groupsOfNode,
      concurrency: new Map(Object.entries(concurrency)),
    };
  }
}
