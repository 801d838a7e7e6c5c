import { assertNoErrors, parseTaskFile } from '@granule/task-model';
import type { NodeSpec } from '@granule/task-model';
import { buildPlan } from './build-plan';
import { readyTaskComparator, readyTaskRank } from './ready-order';
import type { ReadyRankInput } from './ready-order';
import { simulatePlan } from './simulate-plan';

/** A chain of instances `0 -> 1 -> ...` (each requires the previous one) on the given nodes. */
function chain(nodes: number[], extra: [number, number][] = []): ReadyRankInput {
  const preds: number[][] = nodes.map((_, i) => (i === 0 ? [] : [i - 1]));
  for (const [from, to] of extra) preds[to].push(from);
  return {
    order: nodes.map((_, i) => i),
    preds,
    anyPreds: new Map(),
    node: nodes,
    duration: Float64Array.from(nodes, () => 1),
  };
}

describe("astute's task weight (fuel-astute lib/fuel_deployment/task.rb, spec/unit/fuel_deployment/task_spec.rb)", () => {
  it('task weight for a single node - a chain of three on one node weighs 2, 1, 0 (one per successor behind it)', () => {
    expect([...readyTaskRank(chain([7, 7, 7]), 'astute-weight')]).toEqual([2, 1, 0]);
  });

  it('task weight between nodes - a successor on another node counts 10, so 11, 10, 0', () => {
    expect([...readyTaskRank(chain([1, 1, 2]), 'astute-weight')]).toEqual([11, 10, 0]);
  });

  it('adds every path: a diamond counts its tail twice, unlike the longest chain', () => {
    // 0 -> 1 -> 3 and 0 -> 2 -> 3, all on one node.
    const diamond: ReadyRankInput = {
      order: [0, 1, 2, 3],
      preds: [[], [0], [0], [1, 2]],
      anyPreds: new Map(),
      node: [1, 1, 1, 1],
      duration: Float64Array.from([1, 1, 1, 1]),
    };
    expect([...readyTaskRank(diamond, 'astute-weight')]).toEqual([4, 1, 1, 0]);
    expect([...readyTaskRank(diamond, 'longest-remaining-work')]).toEqual([3, 2, 2, 1]);
  });
});

describe('longest remaining work (the default rule)', () => {
  it('is the instance plus the longest chain of work after it, on any node; sync points add nothing', () => {
    const input = chain([1, 1, 2, 2]);
    input.duration[1] = 0;
    expect([...readyTaskRank(input)]).toEqual([3, 2, 2, 1]);
  });

  it('counts any-of producers like plain predecessors', () => {
    const input: ReadyRankInput = {
      order: [0, 1, 2],
      preds: [[], [], []],
      anyPreds: new Map([[2, [[0, 1]]]]),
      node: [1, 2, 3],
      duration: Float64Array.from([1, 1, 5]),
    };
    expect([...readyTaskRank(input)]).toEqual([6, 6, 5]);
  });
});

describe('readyTaskComparator', () => {
  it('puts the higher rank first, then the earlier plan position, also between infinite weights', () => {
    const rank = Float64Array.from([1, Infinity, 5, Infinity]);
    const position = Int32Array.from([0, 3, 1, 2]);
    expect([0, 1, 2, 3].sort(readyTaskComparator(rank, position))).toEqual([3, 1, 2, 0]);
    expect([0, 1, 2, 3].sort(readyTaskComparator(rank))).toEqual([1, 3, 2, 0]);
  });
});

describe('the simulator with either rule', () => {
  // Node `hub` has two ready tasks: `seed` unblocks a chain of six on `worker`, `fan` unblocks
  // one short task on each of four `leaf` nodes. astute's weight counts the four cross-node
  // successors (40) above the chain (10 + 5) and runs `fan` first, delaying the longest chain.
  const yaml = `
- {id: seed, type: shell, roles: [hub], parameters: {cmd: x}}
- {id: fan, type: shell, roles: [hub], parameters: {cmd: x}}
- {id: leaf, type: shell, roles: [leaf], cross-depends: [{name: fan, role: [hub]}], parameters: {cmd: x}}
- {id: step-1, type: shell, roles: [worker], cross-depends: [{name: seed, role: [hub]}], parameters: {cmd: x}}
${[2, 3, 4, 5, 6].map((k) => `- {id: step-${k}, type: shell, roles: [worker], requires: [step-${k - 1}], parameters: {cmd: x}}`).join('\n')}
`;
  const nodes: NodeSpec[] = [
    { uid: 'h', roles: ['hub'] },
    { uid: 'w', roles: ['worker'] },
    ...[1, 2, 3, 4].map((i) => ({ uid: `l${i}`, roles: ['leaf'] })),
  ];
  const plan = buildPlan({ tasks: assertNoErrors(parseTaskFile(yaml, 'tasks.yaml')), nodes });
  const firstOnHub = (rule: 'longest-remaining-work' | 'astute-weight'): string | undefined =>
    simulatePlan(plan, { readyOrder: rule }).timeline.find((e) => e.node === 'h')?.task;

  it('longest remaining work starts the long chain first and finishes in 7 units', () => {
    expect(firstOnHub('longest-remaining-work')).toBe('seed');
    expect(simulatePlan(plan).makespan).toBe(7);
  });

  it("astute's weight starts the wide fan-out first and finishes a unit later, in 8", () => {
    expect(firstOnHub('astute-weight')).toBe('fan');
    expect(simulatePlan(plan, { readyOrder: 'astute-weight' }).makespan).toBe(8);
  });
});
