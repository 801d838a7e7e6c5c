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
  const size = doc.instances.length;
  const keys = doc.instances.map((i) => `${i.task}@${i.node}`);
  const index = new Map(keys.map((k, i) => [k, i]));
  const nodeNames: string[] = [];
  const nodeIndex = new Map<string, number>();
  const node = new Int32Array(size);
  const noWork = new Uint8Array(size);
  const planSkipped = new Uint8Array(size);
  const failOnError = new Uint8Array(size);
  doc.instances.forEach((inst, i) => {
    if (inst.node === SYNC_NODE) {
      node[i] = -1;
    } else {
      let n = nodeIndex.get(inst.node);
      if (n === undefined) {
        n = nodeNames.push(inst.node) - 1;
        nodeIndex.set(inst.node, n);
      }
      node[i] = n;
    }
    planSkipped[i] = inst.skipped ? 1 : 0;
    noWork[i] = inst.node === SYNC_NODE || inst.type === 'group' || inst.type === 'stage' || inst.skipped ? 1 : 0;
    failOnError[i] = inst.fail_on_error === false ? 0 : 1;
  });
  const lookup = (name: string): number => {
    const i = index.get(name);
    if (i === undefined) throw new Error(`plan document is inconsistent: '${name}' is required but not in the plan`);
    return i;
  };
  const preds = doc.instances.map((inst) => inst.requires.map(lookup));
  const anyPreds = new Map<number, number[][]>();
  doc.instances.forEach((inst, i) => {
    if (inst.requires_any?.length)
      anyPreds.set(
        i,
        inst.requires_any.map((g) => g.map(lookup)),
      );
  });
  const succ: number[][] = Array.from({ length: size }, () => []);
  preds.forEach((list, i) => {
    for (const p of list) succ[p].push(i);
  });
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
  // Instances come in priority order, so sorting by it gives an order with predecessors first.
  const order = doc.instances
    .map((inst, i) => [inst.priority, i] as const)
    .sort((a, b) => a[0] - b[0] || a[1] - b[1])
    .map(([, i]) => i);
  const duration = Float64Array.from(noWork, (v) => (v ? 0 : 1));
  const work = readyTaskRank({ order, preds, anyPreds, node, duration });
  const groups: ExecGroup[] = doc.groups.map((g) => ({
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
    keys,
    index,
    task: doc.instances.map((i) => i.task),
    node,
    nodeNames,
    nodeIndex,
    instancesOfNode,
    type: doc.instances.map((i) => i.type),
    parameters: doc.instances.map((i) => i.parameters),
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
    concurrency: new Map(Object.entries(doc.concurrency)),
  };
}
