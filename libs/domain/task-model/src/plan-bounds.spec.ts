import { INPUT_LIMITS } from '@granule/core';
import { countPlanInstances, planSizeProblems } from './plan-bounds';
import { assertNoErrors, parseTaskFile } from './task-file-parser';
import type { NodeSpec } from './types';

const tasks = assertNoErrors(
  parseTaskFile(
    [
      '- {id: start, type: stage}',
      '- {id: a, type: shell, version: 2.0.0, roles: [controller], parameters: {cmd: a}}',
      "- {id: b, type: shell, version: 2.0.0, roles: '*', parameters: {cmd: b}}",
      '- {id: c, type: shell, version: 2.0.0, roles: [/comp.*/], parameters: {cmd: c}}',
    ].join('\n'),
    'd/deployment_tasks.yaml',
  ),
);
const fleet = (n: number): NodeSpec[] =>
  Array.from({ length: n }, (_, i) => ({ uid: `n${i}`, roles: [i % 10 === 0 ? 'controller' : 'compute'] }));

describe('plan bounds', () => {
  it('countPlanInstances - counts a task once per node its selector matches, stages once', () => {
    // 10 nodes: 1 controller, 9 computes -> start 1 + a 1 + b 10 + c 9.
    expect(countPlanInstances(tasks, fleet(10))).toBe(21);
  });

  it('10,000 nodes - counted at once, well inside the bound (a large valid deployment plans)', () => {
    expect(countPlanInstances(tasks, fleet(10_000))).toBe(1 + 1_000 + 10_000 + 9_000);
    expect(planSizeProblems(tasks, fleet(10_000))).toEqual([]);
  });

  it('over the node bound or the instance bound - PLAN_TOO_LARGE naming the bound and the size', () => {
    expect(planSizeProblems(tasks, fleet(INPUT_LIMITS.planNodes + 1))[0].message).toBe(
      `expected at most ${INPUT_LIMITS.planNodes} nodes, got ${INPUT_LIMITS.planNodes + 1} nodes`,
    );
    const many = Array.from({ length: 300 }, () => tasks[2]);
    expect(planSizeProblems(many, fleet(20_000))[0].message).toBe(
      'the plan would have too many task instances (a task on a node): expected at most 5000000 instances, got 6000000 instances',
    );
  });
});
