import { parseStageRef, readStageRef } from './stage-ref';
import { TaskFieldError } from './task-diagnostics';

describe('parseStageRef', () => {
  // Every form from seed 000's example list, plus a signed and an exponent postfix.
  it.each([
    ['pre_deployment', 'pre_deployment', 0],
    ['pre_deployment/100', 'pre_deployment', 100],
    ['pre_deployment/-100', 'pre_deployment', -100],
    ['pre_deployment/-99.9', 'pre_deployment', -99.9],
    ['pre_deployment/100.0', 'pre_deployment', 100],
    ['pre_deployment/-101', 'pre_deployment', -101],
    ['pre_deployment/0', 'pre_deployment', 0],
    ['post_deployment/50', 'post_deployment', 50],
    ['post_deployment/+5', 'post_deployment', 5],
    ['post_deployment/1e3', 'post_deployment', 1000],
    ['post_deployment/.5', 'post_deployment', 0.5],
    ['deployment', 'deployment', 0],
  ])('%s - reads name %s and priority %d', (raw, name, priority) => {
    expect(parseStageRef(raw)).toEqual({ name, priority, raw });
  });

  it('-0 postfix - priority is plain 0', () => {
    expect(Object.is(parseStageRef('pre_deployment/-0').priority, 0)).toBe(true);
  });

  it('seed 000 example - sorting by priority gives the documented execution order', () => {
    const stages = [
      'pre_deployment',
      'pre_deployment/100',
      'pre_deployment/-100',
      'pre_deployment/-99.9',
      'pre_deployment/100.0',
      'pre_deployment/-101',
      'pre_deployment/0',
    ];
    const sorted = stages.map(parseStageRef).sort((a, b) => a.priority - b.priority);
    expect(sorted.map((s) => s.raw)).toEqual([
      'pre_deployment/-101',
      'pre_deployment/-100',
      'pre_deployment/-99.9',
      'pre_deployment',
      'pre_deployment/0',
      'pre_deployment/100',
      'pre_deployment/100.0',
    ]);
  });

  it.each([
    ['post_deployment:: 50', "stage 'post_deployment:: 50' is not valid: write it as 'post_deployment/50'"],
    ['post_deployment::50', "stage 'post_deployment::50' is not valid: write it as 'post_deployment/50'"],
    ['post_deployment: :50', "stage 'post_deployment: :50' is not valid: write it as 'post_deployment/50'"],
    ['post_deployment:50', "stage 'post_deployment:50' is not valid: write it as 'post_deployment/50'"],
    ['post_deployment 50', "stage 'post_deployment 50' is not valid: write it as 'post_deployment/50'"],
    ['pre_deployment/ -99.9', "stage 'pre_deployment/ -99.9' is not valid: write it as 'pre_deployment/-99.9'"],
    ['post_deployment/', "stage 'post_deployment/' is not valid: write it as 'post_deployment'"],
    [
      'post_deployment/abc',
      "stage 'post_deployment/abc' is not valid: the postfix after '/' must be a number, e.g. 'post_deployment/50'",
    ],
    [
      'post_deployment/1.2.3',
      "stage 'post_deployment/1.2.3' is not valid: the postfix after '/' must be a number, e.g. 'post_deployment/50'",
    ],
    [
      'post_deploy/50',
      "stage 'post_deploy/50' is not valid: expected one of pre_deployment, deployment, post_deployment, optionally with a numeric postfix like 'post_deployment/50'",
    ],
    [
      'deployment_x',
      "stage 'deployment_x' is not valid: expected one of pre_deployment, deployment, post_deployment, optionally with a numeric postfix like 'post_deployment/50'",
    ],
  ])('%s - rejected with a message that shows the right form', (raw, message) => {
    expect(() => parseStageRef(raw)).toThrow(new TaskFieldError('TASK_BAD_STAGE', message));
    try {
      parseStageRef(raw);
    } catch (e) {
      expect((e as TaskFieldError).code).toBe('TASK_BAD_STAGE');
    }
  });

  it('a number instead of a string - TASK_BAD_STAGE naming the value', () => {
    expect(readStageRef(50)).toEqual({
      code: 'TASK_BAD_STAGE',
      message: "stage must be a string like 'post_deployment/50', got 50",
    });
  });
});
