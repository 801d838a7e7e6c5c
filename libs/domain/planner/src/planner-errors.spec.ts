import { formatDiagnostic } from '@granule/core';
import { assertNoErrors, parseTaskFile } from '@granule/task-model';
import type { TaskDefinition } from '@granule/task-model';
import { buildPlan } from './build-plan';
import { PlanCycleError, cycleDiagnostic } from './planner-errors';

const tasksOf = (yaml: string, file: string): TaskDefinition[] => assertNoErrors(parseTaskFile(yaml, file));
const shell = (id: string, requires: string): string =>
  `- id: ${id}\n  type: shell\n  roles: ['*']\n  requires: [${requires}]\n  parameters: {cmd: 'true'}\n`;

function cycleOf(tasks: TaskDefinition[]): PlanCycleError {
  try {
    buildPlan({ tasks, nodes: [{ uid: 'n1', roles: ['x'] }] });
  } catch (err) {
    if (err instanceof PlanCycleError) return err;
    throw err;
  }
  throw new Error('expected a cycle');
}

describe('cycleDiagnostic', () => {
  it('cycle in one file - names the file once and each task by line', () => {
    const tasks = tasksOf(shell('a', 'b') + shell('b', 'a'), 'one.yaml');
    const d = cycleDiagnostic(cycleOf(tasks).cycle, tasks);
    expect(formatDiagnostic(d)).toMatch(
      /^one\.yaml:(1|6): dependency cycle \(each runs before the next\): (a@n1 \(line 1\) -> b@n1 \(line 6\) -> a@n1|b@n1 \(line 6\) -> a@n1 \(line 1\) -> b@n1)$/,
    );
  });

  it('cycle across files - names the other file where its task is', () => {
    const tasks = [...tasksOf(shell('a', 'b'), 'first.yaml'), ...tasksOf(shell('b', 'a'), 'second.yaml')];
    const text = formatDiagnostic(cycleDiagnostic(cycleOf(tasks).cycle, tasks));
    expect(text).toContain('first.yaml');
    expect(text).toContain('second.yaml:1');
    expect(text.match(/first\.yaml/g)).toHaveLength(1);
  });
});
