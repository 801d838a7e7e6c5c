import type { PlanInstance } from '@granule/planner';
import { ExecutablePlanBuilder, toExecutablePlan } from './executable-plan';

function inst(task: string, node: string, priority: number, requires: string[] = []): PlanInstance {
  return {
    task,
    node,
    type: 'shell',
    stage: 'deployment',
    priority,
    requires,
    parameters: { cmd: task },
    skipped: false,
  };
}

describe('ExecutablePlanBuilder', () => {
  it('resolves a name required before it was added and ranks by priority, not arrival', () => {
    const b = new ExecutablePlanBuilder();
    b.add(inst('b', 'n1', 2, ['a@n1']));
    b.add(inst('a', 'n1', 1));
    b.add(inst('c', 'n2', 3, ['b@n1', 'a@n1']));
    const plan = b.finish([{ id: 'g', nodes: ['n2', 'nx'], faultTolerance: 1 }], { n1: 2 });
    expect(plan.keys).toEqual(['b@n1', 'a@n1', 'c@n2']);
    expect(plan.preds).toEqual([[1], [], [0, 1]]);
    expect(plan.succ).toEqual([[2], [0, 2], []]);
    // a → b → c is the longest chain: a has 3 units of work behind it, b 2, c 1.
    expect([...plan.work]).toEqual([2, 3, 1]);
    expect(plan.nodeNames).toEqual(['n1', 'n2']);
    expect(plan.instancesOfNode).toEqual([[0, 1], [2]]);
    expect(plan.groups).toEqual([{ id: 'g', nodes: [1], tolerance: 1 }]);
    expect(plan.concurrency).toEqual(new Map([['n1', 2]]));
  });

  it('a required name that never comes is a clear error at finish', () => {
    const b = new ExecutablePlanBuilder();
    b.add(inst('b', 'n1', 2, ['a@n9']));
    expect(() => b.finish([], {})).toThrow("plan document is inconsistent: 'a@n9' is required but not in the plan");
  });

  it('toExecutablePlan gives what the builder gives', () => {
    const instances = [inst('a', 'n1', 1), inst('b', 'n1', 2, ['a@n1'])];
    const b = new ExecutablePlanBuilder();
    instances.forEach((i) => b.add(i));
    expect(toExecutablePlan({ instances, groups: [], concurrency: {} })).toEqual(b.finish([], {}));
  });
});
