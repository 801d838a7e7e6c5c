import { readFaultTolerance, resolveFaultTolerance } from './fault-tolerance';

describe('readFaultTolerance', () => {
  it.each([
    [2, { kind: 'count', value: 2, mustSucceed: false }],
    ['3', { kind: 'count', value: 3, mustSucceed: false }],
    [0, { kind: 'count', value: 0, mustSucceed: false }],
    [-1, { kind: 'count', value: 1, mustSucceed: true }],
    ['10%', { kind: 'percent', value: 10, mustSucceed: false }],
    [' 12.5% ', { kind: 'percent', value: 12.5, mustSucceed: false }],
    ['-10%', { kind: 'percent', value: 10, mustSucceed: true }],
  ])('%p - reads as %p', (raw, expected) => {
    expect(readFaultTolerance(raw)).toEqual(expected);
  });

  it.each([
    [
      1.5,
      "expected a node count like 2, a percent like '10%', or a negative one like -2 or '-10%' (that many must succeed), got 1.5",
    ],
    [
      'ten',
      "expected a node count like 2, a percent like '10%', or a negative one like -2 or '-10%' (that many must succeed), got \"ten\"",
    ],
    [
      [1],
      "expected a node count like 2, a percent like '10%', or a negative one like -2 or '-10%' (that many must succeed), got a list",
    ],
    ['150%', 'expected a percent between 0% and 100%, got "150%"'],
  ])('%p - rejected', (raw, message) => {
    expect(readFaultTolerance(raw)).toEqual({ code: 'TASK_BAD_FIELD', message });
  });
});

describe('resolveFaultTolerance', () => {
  it.each([
    ['none', undefined, 10, 0],
    ['count', { kind: 'count', value: 2, mustSucceed: false }, 10, 2],
    ['count larger than the group is clamped', { kind: 'count', value: 20, mustSucceed: false }, 10, 10],
    ['percent rounds down', { kind: 'percent', value: 10, mustSucceed: false }, 19, 1],
    ['percent of a small group may be 0', { kind: 'percent', value: 10, mustSucceed: false }, 9, 0],
    ['percent with a binary fraction rounds correctly', { kind: 'percent', value: 14.3, mustSucceed: false }, 7, 1],
    ['100% lets the whole group fail', { kind: 'percent', value: 100, mustSucceed: false }, 7, 7],
    ['must-succeed count', { kind: 'count', value: 1, mustSucceed: true }, 5, 4],
    ['must-succeed count larger than the group gives 0', { kind: 'count', value: 8, mustSucceed: true }, 5, 0],
    ['must-succeed percent rounds the successes up', { kind: 'percent', value: 10, mustSucceed: true }, 5, 4],
    ['must-succeed percent exact', { kind: 'percent', value: 50, mustSucceed: true }, 10, 5],
    ['empty group', { kind: 'count', value: 3, mustSucceed: false }, 0, 0],
  ] as const)('%s', (_name, ft, size, expected) => {
    expect(resolveFaultTolerance(ft, size)).toBe(expected);
  });
});
